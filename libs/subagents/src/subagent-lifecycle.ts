/**
 * SDK-level lifecycle records, recorded on the PARENT context's lifecycle log as
 * `{ kind: 'subagent_started' | 'subagent_completed' | 'subagent_failed', payload }`.
 */
export const SubagentLifecycleEventKind = {
  started: 'subagent_started',
  completed: 'subagent_completed',
  failed: 'subagent_failed',
} as const
export type SubagentLifecycleEventKind =
  (typeof SubagentLifecycleEventKind)[keyof typeof SubagentLifecycleEventKind]

export interface SubagentLifecycleEvent {
  readonly kind: 'started' | 'completed' | 'failed'
  readonly taskId: string
  readonly name: string
  /**
   * The task's metadata. On `failed` it also carries `error_kind` (a snake-case error category),
   * `message` and, when a tool caused the failure, `tool_name` — failure keys win over task keys.
   */
  readonly metadata: Readonly<Record<string, unknown>>
  readonly runId?: string
  /** Present on `completed`. */
  readonly output?: string
}

/** Read a bus record back as a lifecycle event, or `undefined` if it is some other record. */
export function asSubagentLifecycleEvent(record: {
  readonly kind: string
  readonly payload: unknown
}): SubagentLifecycleEvent | undefined {
  const kinds: readonly string[] = Object.values(SubagentLifecycleEventKind)
  return kinds.includes(record.kind) ? (record.payload as SubagentLifecycleEvent) : undefined
}
