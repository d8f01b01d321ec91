import type {
  InheritableCapabilityBundle,
  InheritableHook,
} from './capability-inheritance-policy.ts'
import type { ToolDescriptor } from './tool-descriptor.ts'

/** One record of a context's lifecycle log (e.g. `subagent_started`). */
export interface LifecycleRecord {
  readonly kind: string
  readonly payload: unknown
}

/**
 * An agent context's in-process lifecycle log: keeps every record in order (so callers can inspect
 * them after a run) and fans out to subscribers. Named apart from the queue's worker commands and
 * attempt settlements, and from an agent's durable history: it is neither durable nor distributed.
 */
export interface LifecycleLog {
  record(kind: string, payload: unknown): void
  /** A snapshot of every record so far, oldest first. */
  records(): readonly LifecycleRecord[]
  /** Live observation; returns an unsubscribe function. Subscriber exceptions are contained. */
  subscribe(listener: (event: LifecycleRecord) => void): () => void
}

export function createLifecycleLog(): LifecycleLog {
  const recorded: LifecycleRecord[] = []
  const listeners = new Set<(event: LifecycleRecord) => void>()
  return {
    record(kind, payload) {
      const event = { kind, payload }
      recorded.push(event)
      for (const listener of [...listeners]) {
        try {
          listener(event)
        } catch {
          // Observers must not be able to break the recorder (a delegation in flight).
        }
      }
    },
    records: () => [...recorded],
    subscribe(listener) {
      const entry = (event: LifecycleRecord): void => listener(event)
      listeners.add(entry)
      return () => {
        listeners.delete(entry)
      }
    },
  }
}

export interface Usage {
  readonly requests: number
  readonly inputTokens: number
  readonly outputTokens: number
}

/** Accumulated model usage. Shared by reference between a parent context and its children. */
export interface UsageTracker {
  add(usage: Partial<Usage>): void
  snapshot(): Usage
}

export function createUsageTracker(): UsageTracker {
  let totals: Usage = { requests: 0, inputTokens: 0, outputTokens: 0 }
  return {
    add(usage) {
      totals = {
        requests: totals.requests + (usage.requests ?? 0),
        inputTokens: totals.inputTokens + (usage.inputTokens ?? 0),
        outputTokens: totals.outputTokens + (usage.outputTokens ?? 0),
      }
    },
    snapshot: () => totals,
  }
}

/**
 * The application-level context an agent run carries. Delegation derives a child context from it:
 * `usage` and `dependencies` are shared by reference (the child's spend is the parent's spend, and
 * injected services are the same instances); `metadata` is copied (plus the subagent stack) so a
 * child cannot write into its parent's map; the child gets its own `lifecycle` log, while lifecycle
 * records go to the parent's; `tools`, `hooks` and `capabilityBundles` are what the inheritance
 * policies let through. The mutable fields are mutable on purpose: execution hooks may adjust the
 * child context before it runs.
 */
export interface AgentContext {
  readonly metadata: Map<string, unknown>
  readonly lifecycle: LifecycleLog
  readonly usage: UsageTracker
  readonly dependencies: Map<string, unknown>
  /** The tools visible to this agent — what a delegation from here inherits from. */
  tools: readonly ToolDescriptor[]
  hooks: readonly InheritableHook[]
  capabilityBundles: readonly InheritableCapabilityBundle[]
}

export interface AgentContextInit {
  readonly metadata?: Iterable<readonly [string, unknown]>
  readonly lifecycle?: LifecycleLog
  readonly usage?: UsageTracker
  readonly dependencies?: Map<string, unknown>
  readonly tools?: readonly ToolDescriptor[]
  readonly hooks?: readonly InheritableHook[]
  readonly capabilityBundles?: readonly InheritableCapabilityBundle[]
}

export function createAgentContext(init: AgentContextInit = {}): AgentContext {
  return {
    metadata: new Map(init.metadata ?? []),
    lifecycle: init.lifecycle ?? createLifecycleLog(),
    usage: init.usage ?? createUsageTracker(),
    dependencies: init.dependencies ?? new Map<string, unknown>(),
    tools: init.tools ?? [],
    hooks: init.hooks ?? [],
    capabilityBundles: init.capabilityBundles ?? [],
  }
}
