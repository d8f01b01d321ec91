import type { Db } from '../db.ts'
import type { RunRow, RunStatus, RunTrigger } from '../schema.ts'

/** One run as the ledger holds it, without its owner fields. */
export interface RunRecord {
  readonly id: string
  readonly sessionId: string
  readonly triggerType: RunTrigger
  readonly status: RunStatus
  /** For a continuation run: the attempt whose result it carries. */
  readonly causeAttemptId: string | null
  readonly createdAt: Date
  /** When it ended (completed, failed, cancelled or abandoned). */
  readonly endedAt: Date | null
  /** While active: when its lease (a host's, or a claim's) ends unless renewed. */
  readonly leaseExpiresAt: Date | null
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
    endedAt: row.settled_at,
    leaseExpiresAt: row.lease_expires_at,
  }
}
