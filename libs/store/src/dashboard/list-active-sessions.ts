import { sql } from 'kysely'
import type { Db } from '../db.ts'
import { TRANSIENT_READ_RETRY, retryTransient } from '../pg-errors.ts'
import { batchSize } from '../retention/remove-expired-history.ts'

export interface ActiveSession {
  readonly namespaceId: string
  readonly sessionId: string
  /** A hosted session's profile; null for a session its host runs. */
  readonly profile: string | null
  readonly createdAt: Date
  readonly deletedAt: Date | null
  /** The latest accept, start or end among the attempts read (hosted runs are attempts too). */
  readonly activeAt: Date
}

/**
 * The sessions most recently active, across every namespace, at most `limit`, the latest first.
 * Activity is read from the attempts, through their indexes and never the history behind them:
 * the last `scan` to end (terminal time), and at most `scan` running and `scan` queued ones (their
 * partial indexes); each session is then read by its primary key. A session whose every attempt
 * ended before the last `scan` terminals is not listed.
 */
export async function listActiveSessions(
  db: Db,
  input: { readonly limit: number; readonly scan: number },
): Promise<ActiveSession[]> {
  // Written into the statement, not bound: a generic plan cannot know a bound limit.
  const scan = sql.lit(batchSize(input.scan))
  const limit = sql.lit(batchSize(input.limit))
  const result = await retryTransient(
    () =>
      sql<{
        namespace_id: string
        id: string
        profile: string | null
        created_at: Date
        deleted_at: Date | null
        active_at: Date
      }>`
        with recent as (
          (select namespace_id, session_id, terminal_at as at from attempts
           where terminal_at is not null order by terminal_at desc limit ${scan})
          union all
          (select namespace_id, session_id, coalesce(started_at, created_at) from attempts
           where status = 'running' order by lease_expires_at limit ${scan})
          union all
          (select namespace_id, session_id, created_at from attempts
           where status = 'accepted' order by created_at desc limit ${scan})
        ), latest as (
          select namespace_id, session_id, max(at) as active_at from recent
          group by namespace_id, session_id order by active_at desc limit ${limit}
        )
        select s.namespace_id, s.id, s.profile, s.created_at, s.deleted_at, l.active_at
        from latest l
        join sessions s on s.namespace_id = l.namespace_id and s.id = l.session_id
        order by l.active_at desc, s.namespace_id, s.id
      `.execute(db),
    TRANSIENT_READ_RETRY,
  )
  return result.rows.map((r) => ({
    namespaceId: r.namespace_id,
    sessionId: r.id,
    profile: r.profile,
    createdAt: r.created_at,
    deletedAt: r.deleted_at,
    activeAt: r.active_at,
  }))
}
