import type { Db } from '../db.ts'
import type { RunRow, RunStatus, RunTrigger } from '../schema.ts'

/** One run as the ledger holds it, without its lease fields. */
export interface RunRecord {
  readonly id: string
  readonly sessionId: string
  readonly triggerType: RunTrigger
  readonly status: RunStatus
  /** For a continuation run: the attempt whose result it carries. */
  readonly causeAttemptId: string | null
  readonly createdAt: Date
  readonly settledAt: Date | null
}

/** Reads one run of a namespace, or `undefined` (a run of another namespace is missing too). */
export async function getRun(
  db: Db,
  namespaceId: string,
  runId: string,
): Promise<RunRecord | undefined> {
  const row = await db
    .selectFrom('runs')
    .selectAll()
    .where('id', '=', runId)
    .where('namespace_id', '=', namespaceId)
    .executeTakeFirst()
  return row === undefined ? undefined : toRunRecord(row)
}

export function toRunRecord(row: RunRow): RunRecord {
  return {
    id: row.id,
    sessionId: row.session_id,
    triggerType: row.trigger_type,
    status: row.status,
    causeAttemptId: row.cause_attempt_id,
    createdAt: row.created_at,
    settledAt: row.settled_at,
  }
}
