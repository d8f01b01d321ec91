import { sql } from 'kysely'
import type { Db } from '../db.ts'
import { reconcileDeliveries } from './reconcile-deliveries.ts'

/**
 * The deletion fence of a session: sets `deleted_at` once (a repeat keeps the first time), then
 * reconciles the session's deliveries in the same transaction, which suppresses pending
 * continuations (`session_deleted`). From then on no delegation, run or continuation is admitted
 * into it; every row stays as evidence. Admission share-locks the session row, so a result landing
 * concurrently is either seen here or sees the fence.
 * Outcome: deleted | missing (also for another namespace's session). Retry safety: idempotent.
 */
export async function deleteSession(
  db: Db,
  input: { readonly namespaceId: string; readonly sessionId: string },
): Promise<'deleted' | 'missing'> {
  return db.transaction().execute(async (trx) => {
    const fenced = await sql<{ id: string }>`
      update sessions set deleted_at = coalesce(deleted_at, now())
      where namespace_id = ${input.namespaceId} and id = ${input.sessionId}
      returning id
    `.execute(trx)
    if (fenced.rows.length === 0) return 'missing'
    await reconcileDeliveries(trx, input)
    return 'deleted'
  })
}
