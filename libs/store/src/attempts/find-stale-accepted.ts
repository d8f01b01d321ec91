import { sql } from 'kysely'
import type { Db } from '../db.ts'

/**
 * Accepted attempts older than `olderThanMs` (database clock): candidates whose job may have been
 * lost with Redis. The reconciler checks each against the queue and re-enqueues the missing ones.
 */
export async function findStaleAccepted(
  db: Db,
  input: { readonly olderThanMs: number; readonly limit: number },
): Promise<string[]> {
  const result = await sql<{ id: string }>`
    select id from attempts
    where status = 'accepted' and created_at <= now() - ${input.olderThanMs} * interval '1 millisecond'
    order by created_at
    limit ${input.limit}
  `.execute(db)
  return result.rows.map((r) => r.id)
}
