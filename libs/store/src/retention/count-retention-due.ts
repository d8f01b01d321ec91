import { sql } from 'kysely'
import type { Db } from '../db.ts'
import { TRANSIENT_READ_RETRY, retryTransient } from '../pg-errors.ts'
import { batchSize } from './remove-expired-history.ts'

export interface RetentionDue {
  readonly namespaceId: string
  /** The namespace's retention: its own, or the default. */
  readonly retentionMs: number
  /**
   * Terminal attempts that ended before the retention, at most `cap`: what the next passes remove,
   * less those an agent still in use, an open continuation or a live artifact keeps.
   */
  readonly attempts: number
  /** Ended host runs before the retention, at most `cap`. */
  readonly runs: number
}

/**
 * What ledger retention removes next, per namespace, read from the indexes a retention batch reads
 * (migration 0050): each count stops at `cap`, so its cost never follows the history. Read-only;
 * for the dashboard.
 */
export async function countRetentionDue(
  db: Db,
  input: { readonly defaultRetentionMs: number; readonly cap: number },
): Promise<RetentionDue[]> {
  // Written into the statement, ordered like the indexes: a bound limit gets a generic plan made
  // for a tenth of the table, which may read the table instead.
  const cap = sql.lit(batchSize(input.cap))
  const { rows } = await retryTransient(
    () =>
      sql<{ id: string; retention_ms: string; attempts: number; runs: number }>`
        with ns as (
          select id, coalesce(ledger_retention_ms, ${input.defaultRetentionMs}) as retention_ms
          from namespaces
        )
        select ns.id, ns.retention_ms::text as retention_ms,
          (select count(*)::int from (
             select 1 from attempts
             where namespace_id = ns.id and terminal_at is not null
               and terminal_at < now() - ns.retention_ms * interval '1 millisecond'
             order by terminal_at limit ${cap}) a) as attempts,
          (select count(*)::int from (
             select 1 from runs
             where namespace_id = ns.id and settled_at is not null and cause_attempt_id is null
               and settled_at < now() - ns.retention_ms * interval '1 millisecond'
             order by settled_at limit ${cap}) r) as runs
        from ns order by ns.id
      `.execute(db),
    TRANSIENT_READ_RETRY,
  )
  return rows.map((r) => ({
    namespaceId: r.id,
    retentionMs: Number(r.retention_ms),
    attempts: r.attempts,
    runs: r.runs,
  }))
}
