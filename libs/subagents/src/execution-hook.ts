import type { AgentContext, Usage } from './agent-context.ts'

/** What a hook learns about the delegation it wraps. */
export interface SubagentExecutionMetadata {
  readonly name: string
  readonly taskId: string
  readonly prompt: string
  readonly taskMetadata?: Readonly<Record<string, unknown>>
  /** The child's position in the subagent stack: 1 for a direct child of the main agent. */
  readonly depth: number
}

export type SubagentExecutionOutcome =
  | {
      readonly status: 'completed'
      readonly output: string
      readonly usage?: Usage
      readonly runId?: string
    }
  | { readonly status: 'failed'; readonly error: unknown }

/**
 * Application policy around one child run. `beforeSubagentRun` may mutate the child context (add
 * metadata, narrow tools); throwing from it refuses the delegation. `afterSubagentRun` observes
 * the outcome; throwing from it fails the delegation. Hooks run in registration order.
 */
export interface SubagentExecutionHook {
  beforeSubagentRun?(
    metadata: SubagentExecutionMetadata,
    childContext: AgentContext,
  ): void | Promise<void>
  afterSubagentRun?(
    metadata: SubagentExecutionMetadata,
    childContext: AgentContext,
    outcome: SubagentExecutionOutcome,
  ): void | Promise<void>
}
