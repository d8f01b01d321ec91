import type { AnyAttemptView, StopReason } from '@baton/contracts'
import type { Db } from '../db.ts'
import { TRANSIENT_READ_RETRY, retryTransient } from '../pg-errors.ts'
import type { AttemptRow } from '../schema.ts'

/** Reads one attempt as the public view, or `undefined`. */
export async function getAttempt(db: Db, attemptId: string): Promise<AnyAttemptView | undefined> {
  const row = await retryTransient(
    () => db.selectFrom('attempts').selectAll().where('id', '=', attemptId).executeTakeFirst(),
    TRANSIENT_READ_RETRY,
  )
  return row === undefined ? undefined : toAttemptView(row)
}

export function toAttemptView(row: AttemptRow): AnyAttemptView {
  const base = {
    attemptId: row.id,
    agentId: row.agent_id,
    sessionId: row.session_id,
    name: row.name,
    createdAt: row.created_at.toISOString(),
    startedAt: row.started_at?.toISOString() ?? null,
    cancelRequested: row.cancel_requested_at !== null,
  }
  if (row.status !== 'terminal') return { ...base, status: row.status }
  return {
    ...base,
    status: 'terminal',
    stopReason: row.stop_reason as StopReason,
    output: row.output_preview ?? '',
    outputTruncated: row.output_truncated ?? false,
    outputBytes: row.output_bytes ?? 0,
    digest: row.output_digest ?? '',
    failureCategory: row.failure_category,
    terminalAt: (row.terminal_at ?? row.created_at).toISOString(),
    context:
      row.context_base === null || row.context_event_count === null
        ? null
        : { baseSeq: row.context_base, eventCount: row.context_event_count },
  }
}
