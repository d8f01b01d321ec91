/**
 * The subagent seam's vocabulary (seed 003, "Subagent"): what a caller asks for, what a provider
 * advertises, the live run handle and the terminal result. Everything else in this library —
 * the service, the SDK registry, policies, markdown specs — is built on these types.
 */

/** A piece of content exchanged with an agent. Text is the only kind Baton carries today. */
export interface TextContentBlock {
  readonly type: 'text'
  readonly text: string
}
export type ContentBlock = TextContentBlock

export type SessionId = string

/** The durable header of an agent session. */
export interface SessionHeader {
  readonly id: SessionId
  /** Working directory of the session; the child's workspace unless a provider overrides it. */
  readonly cwd: string
  /** The session that spawned this one, if any. */
  readonly parentSession?: SessionId
  /** Durable delegation depth; absent means top level (zero). */
  readonly delegationDepth?: number
}

/**
 * Per-agent options. Merge-extensible: providers and plugins may add fields. `subagentDepth` is the
 * runtime depth (the greater of it and the durable header depth is authoritative).
 */
export interface AgentOptions {
  readonly model?: string
  readonly subagentDepth?: number
  readonly [extension: string]: unknown
}

/**
 * The minimal view of an agent that the seam needs: its session (for cwd, lineage and depth) and
 * its options. Runtimes (libs/agents) implement richer agents that satisfy this shape.
 */
export interface Agent {
  readonly session: { readonly id: SessionId; readonly header: SessionHeader }
  readonly options: AgentOptions
}

/** Which START-TIME features a provider supports; checked by the service before `start`. */
export interface SubagentCapabilities {
  readonly outputSchema: boolean
  readonly depthLimit: boolean
  readonly toolFilter: boolean
  readonly persona: boolean
  /** The provider accepts `request.history`: it can resume a child from a persisted log. */
  readonly history: boolean
}

/** One event of a child's conversation log, as JSON. The in-process runtime's SessionEvent is one. */
export interface SubagentHistoryEvent {
  readonly seq: number
  readonly type: string
  readonly [field: string]: unknown
}

/** A JSON Schema object within the subset `assertSupportedOutputSchema` accepts. */
export type StructuredOutputSchema = Readonly<Record<string, unknown>>

/** Child tool scoping: the named tools vanish from the child's prompt and refuse to execute. */
export interface ToolRestriction {
  readonly deny: readonly string[]
}

/** What a caller asks for when starting a subagent. */
export interface SubagentStartRequest {
  readonly prompt: readonly ContentBlock[]
  readonly parent: Agent
  /** The single cancellation channel, before and after the run is ready. */
  readonly signal: AbortSignal
  readonly agentOptions?: AgentOptions
  readonly outputSchema?: StructuredOutputSchema
  readonly maxDepth?: number
  readonly toolFilter?: ToolRestriction
  readonly persona?: string
  /**
   * A durable conversation to resume from: a balanced completed-turn log contiguous from seq 0.
   * The provider validates it before creating anything. Requires `capabilities.history`.
   */
  readonly history?: readonly SubagentHistoryEvent[]
  /**
   * The host's output memory budget as this run sees it. A provider that knows an output's size
   * before it builds it reserves that size here first, and does not build an output that does not
   * fit (it ends `error` with the host's budget category instead). Absent: no budget.
   */
  readonly outputBudget?: OutputBudget
}

/** A share of the host's memory for child output; reservations are the run's until the host ends it. */
export interface OutputBudget {
  /** Reserves `bytes` more (UTF-8) for this run's output; false, reserving nothing, when they do not fit. */
  reserve(bytes: number): boolean
}

/** Why a run ended. Merge-extensible: consumers treat an unknown reason as a failure. */
export interface SubagentStopReasonMap {
  completed: 'completed'
  aborted: 'aborted'
  error: 'error'
  'max-tokens': 'max-tokens'
  refusal: 'refusal'
}
export type SubagentStopReason = SubagentStopReasonMap[keyof SubagentStopReasonMap]

/** The terminal outcome of a run. A non-`completed` reason means `output` may be partial. */
export interface SubagentResult {
  readonly output: readonly ContentBlock[]
  readonly structured?: unknown
  readonly stopReason: SubagentStopReason
  /**
   * A safe public failure category when `stopReason` is not `completed` (never a stack trace).
   * A string at the seam, so third-party providers can declare their own; Baton's providers emit
   * `FailureCategory` values of `@baton/contracts`, and the host maps anything else into that set
   * before it is stored.
   */
  readonly failureCategory?: string
  /** The tokens the child's model calls spent, when its provider counts them. */
  readonly usage?: { readonly inputTokens: number; readonly outputTokens: number }
}

/** Consumer-owned handle of a ready child. Always `dispose()` it. */
export interface SubagentRun {
  readonly id: SessionId
  /** The exact in-process child, or `undefined` for a remote run. */
  readonly localAgent: Agent | undefined
  /** Resolves on child failure with a non-completed stop reason; rejects only on infrastructure faults. */
  readonly result: Promise<SubagentResult>
  /** Cancel remaining work, reach quiescence, release resources. Idempotent. */
  dispose(): Promise<void>
  /** Steering capability: present only on providers that support it. */
  sendMessage?(content: readonly ContentBlock[]): void
  /** Resume capability: a follow-up on a settled child, returning a fresh run. */
  resume?(content: readonly ContentBlock[]): Promise<SubagentRun>
  /**
   * History capability: a snapshot of the child's conversation log, with any resumed history as
   * its prefix. Only what a caller has validated (and persisted) should be trusted as context.
   */
  history?(): readonly SubagentHistoryEvent[]
}

/** A child-agent transport registered under a unique name. */
export interface SubagentProvider {
  readonly name: string
  readonly capabilities: SubagentCapabilities
  /** Descriptive only: whether the child sees the parent's completed-turn prefix. */
  readonly inheritsParentContext: boolean
  /** Fulfils only with a ready run; on rejection the provider has cleaned up everything. */
  start(request: SubagentStartRequest): Promise<SubagentRun>
}
