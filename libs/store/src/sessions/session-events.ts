import { sql } from 'kysely'
import type { Db } from '../db.ts'

/** One event of a hosted session's log (migration 0041). */
export interface SessionEventRecord {
  readonly seq: number
  readonly kind: string
  readonly runId: string | null
  /** Null for the parent's own records; a child's attribution otherwise. */
  readonly source: Readonly<Record<string, unknown>> | null
  readonly payload: unknown
  readonly at: Date
}

/**
 * A session's events after `afterSeq`, in seq order, at most `limit`; with `runId`, only the
 * events of that run (its parent's records, its children's records and lifecycle, its own).
 * Read by primary key order: a session's events commit in seq order, so reading on from the last
 * seq seen loses nothing and repeats nothing.
 */
export async function readSessionEvents(
  db: Db,
  input: {
    readonly namespaceId: string
    readonly sessionId: string
    readonly afterSeq: number
    readonly runId?: string | undefined
    readonly limit: number
  },
): Promise<SessionEventRecord[]> {
  const result = await sql<{
    seq: string
    kind: string
    run_id: string | null
    source: Record<string, unknown> | null
    payload: unknown
    at: Date
  }>`
    select seq, kind, run_id, source, payload, at from session_events
    where namespace_id = ${input.namespaceId} and session_id = ${input.sessionId}
      and seq > ${input.afterSeq}
      ${input.runId === undefined ? sql`` : sql`and run_id = ${input.runId}::uuid`}
    order by seq
    limit ${input.limit}
  `.execute(db)
  return result.rows.map((r) => ({
    seq: Number(r.seq),
    kind: r.kind,
    runId: r.run_id,
    source: r.source,
    payload: r.payload,
    at: r.at,
  }))
}
