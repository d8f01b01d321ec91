import { randomUUID } from 'node:crypto'
import type { Usage } from './agent-context.ts'

/** One delegated unit of work. The id names the task in lifecycle events and the envelope. */
export interface SubagentTask {
  readonly id: string
  readonly prompt: string
  readonly metadata?: Readonly<Record<string, unknown>>
}

/** A task as a caller may supply it: the id is generated when absent. */
export interface SubagentTaskInput {
  readonly id?: string
  readonly prompt: string
  readonly metadata?: Readonly<Record<string, unknown>>
}

export function createSubagentTask(input: SubagentTaskInput): SubagentTask {
  return {
    id: input.id ?? `task_${randomUUID()}`,
    prompt: input.prompt,
    ...(input.metadata === undefined ? {} : { metadata: input.metadata }),
  }
}

/** What a child run hands back to the registry. */
export interface SubagentRunOutput {
  readonly output: string
  /** The run's own usage, reported to execution hooks and the envelope (not re-added to the shared tracker). */
  readonly usage?: Usage
  readonly runId?: string
}

/** The delegation envelope: which subagent ran which task, and what it produced. */
export interface DelegatedSubagent {
  readonly name: string
  readonly task: SubagentTask
  readonly output: string
  readonly usage?: Usage
  readonly runId?: string
}
