import { sql, type RawBuilder } from 'kysely'
import type { Db } from '../db.ts'

/** What reconciliation did to one delivery (see `baton_reconcile_delivery`, migration 0014). */
export type DeliveryAction =
  /** Nothing due: held for an active run, a claim within its deadline or under a live lease. */
  | 'retained'
  /** A held result whose run ended without consuming it now has its continuation run. */
  | 'admitted'
  /** The consumer completed: delivered. */
  | 'acknowledged'
  /**
   * The consumer lost its lease: the continuation waits for a new claim (or, taken by an
   * explicit run whose host abandoned it, is suppressed again and consumable once more).
   */
  | 'released'
  /** Suppressed with a recorded reason (and the run that caused it). */
  | 'suppressed'
  /** Already concluded: delivered or suppressed. */
  | 'concluded'
  /** Another reconciler holds the row now; it decides. */
  | 'busy'
  | 'missing'

/** One delivery's reconciliation, with the session it belongs to. */
export interface DeliveryOutcome {
  readonly attemptId: string
  readonly action: DeliveryAction
  readonly namespaceId: string
  readonly sessionId: string
}

/** Which deliveries to reconcile. */
export type DeliveryScope =
  /**
   * The reconciler's sweep: deliveries with something due, oldest first, at most `limit`; with
   * `unclaimedAfterMs`, also continuations pending (unclaimed) for longer than that.
   */
  | { readonly due: true; readonly limit: number; readonly unclaimedAfterMs?: number }
  /** The open deliveries of the runs that consume them (after the runs ended). */
  | { readonly consumerRunIds: readonly string[] }
  /** The open deliveries of a session (after its deletion fence). */
  | { readonly namespaceId: string; readonly sessionId: string }
  /** A session's claims past their deadline (before a claim takes the session's next one). */
  | { readonly namespaceId: string; readonly sessionId: string; readonly lapsed: true }

/**
 * Reconcile deliveries: retain, acknowledge, release, admit or suppress each one in scope, by the
 * rules of `baton_reconcile_delivery`. Safe with many reconcilers at once: each row is decided
 * under its row lock, and a row another reconciler holds is skipped (`busy`). Completion handlers
 * call this with their run's scope instead of changing deliveries themselves.
 * Outcome: the action taken per delivery, with its session. Retry safety: every action leaves the
 * state it applies to, so a repeat finds nothing due.
 */
export async function reconcileDeliveries(
  db: Db,
  scope: DeliveryScope,
): Promise<DeliveryOutcome[]> {
  const unclaimedAfter = 'due' in scope ? (scope.unclaimedAfterMs ?? null) : null
  const result = await sql<{
    attempt_id: string
    action: DeliveryAction
    namespace_id: string
    session_id: string
  }>`
    select x.attempt_id, x.namespace_id, x.session_id,
           baton_reconcile_delivery(
             x.attempt_id, ${unclaimedAfter}::float8 * interval '1 millisecond') as action
    from (${candidates(scope)}) as x
  `.execute(db)
  return result.rows.map((r) => ({
    attemptId: r.attempt_id,
    action: r.action,
    namespaceId: r.namespace_id,
    sessionId: r.session_id,
  }))
}

function candidates(scope: DeliveryScope): RawBuilder<unknown> {
  if ('due' in scope) return dueCandidates(scope.limit, scope.unclaimedAfterMs)
  if ('consumerRunIds' in scope) {
    return sql`
      select attempt_id, namespace_id, session_id from continuations
      where consumer_run_id = any(${[...scope.consumerRunIds]}::uuid[])
        and state in ('held', 'claimed')
    `
  }
  if ('lapsed' in scope) {
    return sql`
      select attempt_id, namespace_id, session_id from continuations
      where namespace_id = ${scope.namespaceId} and session_id = ${scope.sessionId}
        and state = 'claimed' and claim_deadline <= now()
    `
  }
  return sql`
    select attempt_id, namespace_id, session_id from continuations
    where namespace_id = ${scope.namespaceId} and session_id = ${scope.sessionId}
      and state in ('held', 'pending', 'claimed')
  `
}

/**
 * The sweep's candidates, each with the time it fell due, oldest first: a claim past its deadline
 * whose consumer holds no live lease of its generation (a claim the reconciler would only retain
 * is not a candidate, so retained claims never fill a batch); an open delivery whose consumer run
 * ended; a pending continuation behind a deletion fence; and, with `unclaimedAfterMs`, one pending
 * longer than that. Each kind is read from its index in due order, at most `limit` of each.
 */
function dueCandidates(limit: number, unclaimedAfterMs: number | undefined): RawBuilder<unknown> {
  const unclaimed =
    unclaimedAfterMs === undefined
      ? sql``
      : sql`
        union all
        (select c.attempt_id, c.namespace_id, c.session_id, r.created_at as due_at
         from continuations c join runs r on r.id = c.consumer_run_id
         where c.state = 'pending'
           and c.admitted_at <= now() - ${unclaimedAfterMs}::float8 * interval '1 millisecond'
           and r.created_at <= now() - ${unclaimedAfterMs}::float8 * interval '1 millisecond'
         order by c.admitted_at
         limit ${limit})`
  return sql`
    select attempt_id, namespace_id, session_id from (
      (select c.attempt_id, c.namespace_id, c.session_id, c.claim_deadline as due_at
       from continuations c join runs r on r.id = c.consumer_run_id
       where c.state = 'claimed' and c.claim_deadline <= now()
         and not (r.status = 'active' and r.lease_expires_at > now()
                  and r.owner_generation = c.claim_generation)
       order by c.claim_deadline
       limit ${limit})
      union all
      (select c.attempt_id, c.namespace_id, c.session_id, r.settled_at as due_at
       from continuations c join runs r on r.id = c.consumer_run_id
       where c.state in ('held', 'claimed')
         and r.status in ('completed', 'failed', 'cancelled', 'abandoned')
       order by r.settled_at
       limit ${limit})
      union all
      (select c.attempt_id, c.namespace_id, c.session_id, s.deleted_at as due_at
       from continuations c
         join sessions s on s.namespace_id = c.namespace_id and s.id = c.session_id
       where c.state = 'pending' and s.deleted_at is not null
       order by s.deleted_at
       limit ${limit})
      ${unclaimed}
    ) as due
    group by attempt_id, namespace_id, session_id
    order by min(due_at), attempt_id
    limit ${limit}
  `
}

/** Answers that changed nothing (another reconciler may have decided instead). */
const UNMOVED: ReadonlySet<DeliveryAction> = new Set(['retained', 'busy', 'concluded', 'missing'])

/** The deliveries a reconciliation moved (admitted, acknowledged, released, suppressed). */
export function movedDeliveries(outcomes: readonly DeliveryOutcome[]): DeliveryOutcome[] {
  return outcomes.filter((o) => !UNMOVED.has(o.action))
}

/**
 * The sessions whose bounded claims may now find something, one delivery each: those a
 * reconciliation admitted or released back to pending.
 */
export function claimableSessions(outcomes: readonly DeliveryOutcome[]): DeliveryOutcome[] {
  const sessions = new Map<string, DeliveryOutcome>()
  for (const o of outcomes) {
    if (o.action === 'admitted' || o.action === 'released')
      sessions.set(JSON.stringify([o.namespaceId, o.sessionId]), o)
  }
  return [...sessions.values()]
}
