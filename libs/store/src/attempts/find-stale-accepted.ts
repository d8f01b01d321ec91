import { sql } from 'kysely'
import type { Db } from '../db.ts'

/** A stale accepted attempt, with the session that decides its queue partition. */
export interface StaleAccepted {
  readonly attemptId: string
  readonly namespaceId: string
  readonly sessionId: string
}

/**
 * Accepted attempts older than `olderThanMs` (database clock): candidates whose job may have been
 * lost with Redis. The reconciler checks each against the queue and re-enqueues the missing ones.
 */
export async function findStaleAccepted(
  db: Db,
  input: { readonly olderThanMs: number; readonly limit: number },
): Promise<StaleAccepted[]> {
  const result = await sql<StaleAccepted>`
    select id as "attemptId", namespace_id as "namespaceId", session_id as "sessionId" from attempts
    where status = 'accepted' and created_at <= now() - ${input.olderThanMs} * interval '1 millisecond'
    order by created_at
    limit ${input.limit}
  `.execute(db)
  return result.rows
}
