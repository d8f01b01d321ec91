import { sql, type RawBuilder } from 'kysely'
import type { Db } from '../db.ts'

/** What reconciliation did to one delivery (see `baton_reconcile_delivery`, migration 0007). */
export type DeliveryAction =
  /** Nothing due: held for an active run, a claim within its deadline or under a live lease. */
  | 'retained'
  /** A held result whose run ended without consuming it now has its continuation run. */
  | 'admitted'
  /** The consumer completed: delivered. */
  | 'acknowledged'
  /** The consumer lost its lease: the continuation waits for a new claim. */
  | 'released'
  /** Suppressed with a recorded reason (and the run that caused it). */
  | 'suppressed'
  /** Already delivered or suppressed. */
  | 'settled'
  /** Another reconciler holds the row now; it decides. */
  | 'busy'
  | 'missing'

/** Which deliveries to reconcile. */
export type DeliveryScope =
  /** The reconciler's sweep: every delivery with something due, at most `limit`. */
  | { readonly due: true; readonly limit: number }
  /** The open deliveries a run consumes (after the run settled). */
  | { readonly consumerRunId: string }
  /** The open deliveries of a session (after its deletion fence, before a claim). */
  | { readonly namespaceId: string; readonly sessionId: string }

/**
 * Reconcile deliveries: retain, acknowledge, release, admit or suppress each one in scope, by the
 * rules of `baton_reconcile_delivery`. Safe with many reconcilers at once: each row is decided
 * under its row lock, and a row another reconciler holds is skipped (`busy`). Completion handlers
 * call this with their run's scope instead of changing deliveries themselves.
 * Outcome: the action taken per delivery. Retry safety: every action leaves the state it applies
 * to, so a repeat finds nothing due.
 */
export async function reconcileDeliveries(
  db: Db,
  scope: DeliveryScope,
): Promise<{ attemptId: string; action: DeliveryAction }[]> {
  const result = await sql<{ attempt_id: string; action: DeliveryAction }>`
    select x.attempt_id, baton_reconcile_delivery(x.attempt_id) as action
    from (${candidates(scope)}) as x
  `.execute(db)
  return result.rows.map((r) => ({ attemptId: r.attempt_id, action: r.action }))
}

function candidates(scope: DeliveryScope): RawBuilder<unknown> {
  if ('due' in scope) {
    return sql`
      (select c.attempt_id from continuations c join runs r on r.id = c.consumer_run_id
       where c.state in ('held', 'claimed')
         and (r.status in ('completed', 'failed', 'cancelled')
              or (c.state = 'claimed' and c.claim_deadline <= now()))
       union all
       select c.attempt_id from continuations c
         join sessions s on s.namespace_id = c.namespace_id and s.id = c.session_id
       where c.state = 'pending' and s.deleted_at is not null)
      limit ${scope.limit}
    `
  }
  if ('consumerRunId' in scope) {
    return sql`
      select attempt_id from continuations
      where consumer_run_id = ${scope.consumerRunId}::uuid and state in ('held', 'claimed')
    `
  }
  return sql`
    select attempt_id from continuations
    where namespace_id = ${scope.namespaceId} and session_id = ${scope.sessionId}
      and state in ('held', 'pending', 'claimed')
  `
}
