import type {
  InheritableCapabilityBundle,
  InheritableHook,
} from './capability-inheritance-policy.ts'
import type { ToolDescriptor } from './tool-descriptor.ts'

/** One record on a context's event bus. */
export interface ContextEvent {
  readonly kind: string
  readonly payload: unknown
}

/** Records every published event in order (so callers can inspect them after a run) and fans out to subscribers. */
export interface EventBus {
  publish(kind: string, payload: unknown): void
  /** A snapshot of every event published so far, oldest first. */
  events(): readonly ContextEvent[]
  /** Live observation; returns an unsubscribe function. Subscriber exceptions are contained. */
  subscribe(listener: (event: ContextEvent) => void): () => void
}

export function createEventBus(): EventBus {
  const recorded: ContextEvent[] = []
  const listeners = new Set<(event: ContextEvent) => void>()
  return {
    publish(kind, payload) {
      const event = { kind, payload }
      recorded.push(event)
      for (const listener of [...listeners]) {
        try {
          listener(event)
        } catch {
          // Observers must not be able to break the publisher (a delegation in flight).
        }
      }
    },
    events: () => [...recorded],
    subscribe(listener) {
      const entry = (event: ContextEvent): void => listener(event)
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
 * child cannot write into its parent's map; the child gets its own `events` bus, while lifecycle
 * events go to the parent's; `tools`, `hooks` and `capabilityBundles` are what the inheritance
 * policies let through. The mutable fields are mutable on purpose: execution hooks may adjust the
 * child context before it runs.
 */
export interface AgentContext {
  readonly metadata: Map<string, unknown>
  readonly events: EventBus
  readonly usage: UsageTracker
  readonly dependencies: Map<string, unknown>
  /** The tools visible to this agent — what a delegation from here inherits from. */
  tools: readonly ToolDescriptor[]
  hooks: readonly InheritableHook[]
  capabilityBundles: readonly InheritableCapabilityBundle[]
}

export interface AgentContextInit {
  readonly metadata?: Iterable<readonly [string, unknown]>
  readonly events?: EventBus
  readonly usage?: UsageTracker
  readonly dependencies?: Map<string, unknown>
  readonly tools?: readonly ToolDescriptor[]
  readonly hooks?: readonly InheritableHook[]
  readonly capabilityBundles?: readonly InheritableCapabilityBundle[]
}

export function createAgentContext(init: AgentContextInit = {}): AgentContext {
  return {
    metadata: new Map(init.metadata ?? []),
    events: init.events ?? createEventBus(),
    usage: init.usage ?? createUsageTracker(),
    dependencies: init.dependencies ?? new Map<string, unknown>(),
    tools: init.tools ?? [],
    hooks: init.hooks ?? [],
    capabilityBundles: init.capabilityBundles ?? [],
  }
}
