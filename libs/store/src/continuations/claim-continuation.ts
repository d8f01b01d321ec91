import { sql } from 'kysely'
import type { Db } from '../db.ts'
import { reconcileDeliveries } from './reconcile-deliveries.ts'

export interface ClaimContinuationInput {
  readonly namespaceId: string
  readonly sessionId: string
  /** Minted by the caller for this claim: the owner half of the fence. */
  readonly ownerId: string
  readonly leaseMs: number
}

/** A continuation a consumer now holds: its run, the receipt and input, and the claim's fence. */
export interface ClaimedContinuation {
  readonly runId: string
  readonly attemptId: string
  readonly receipt: string
  readonly input: string
  readonly ownerId: string
  readonly generation: number
  readonly leaseExpiresAt: Date
}

/**
 * Claim the next admitted continuation of a session (oldest first). First reconciles the
 * session's deliveries (so a claim whose consumer lost its lease is released and can be taken
 * now), then takes one `pending` delivery, skipping rows another claimer holds: its run becomes
 * `active` under (owner, generation + 1) with a lease of `leaseMs` on the database clock, and the
 * delivery `claimed` with that generation and a deadline at the lease's end.
 * Outcome: the claimed continuation, or `undefined` when none is pending.
 * Retry safety: a retried claim takes another continuation (or none); an abandoned claim is
 * released by reconciliation once its lease and deadline expired.
 */
export async function claimContinuation(
  db: Db,
  input: ClaimContinuationInput,
): Promise<ClaimedContinuation | undefined> {
  await reconcileDeliveries(db, { namespaceId: input.namespaceId, sessionId: input.sessionId })
  const result = await sql<{
    run_id: string
    attempt_id: string
    receipt: string
    input: string
    generation: number
    lease_expires_at: Date
  }>`
    with c as (
      select attempt_id, consumer_run_id from continuations
      where namespace_id = ${input.namespaceId} and session_id = ${input.sessionId}
        and state = 'pending'
      order by admitted_at, attempt_id
      limit 1
      for update skip locked
    ), r as (
      update runs
      set status = 'active', owner_id = ${input.ownerId}, owner_generation = owner_generation + 1,
          lease_expires_at = now() + ${input.leaseMs} * interval '1 millisecond'
      from c
      where runs.id = c.consumer_run_id and runs.status = 'pending'
      returning runs.id, runs.owner_generation, runs.lease_expires_at
    ), d as (
      update continuations
      set state = 'claimed', claim_generation = r.owner_generation,
          claim_deadline = r.lease_expires_at
      from r
      where continuations.consumer_run_id = r.id and continuations.state = 'pending'
      returning continuations.attempt_id, continuations.receipt, continuations.input
    )
    select r.id as run_id, d.attempt_id, d.receipt, d.input, r.owner_generation as generation,
           r.lease_expires_at
    from d cross join r
  `.execute(db)
  const row = result.rows[0]
  return row === undefined
    ? undefined
    : {
        runId: row.run_id,
        attemptId: row.attempt_id,
        receipt: row.receipt,
        input: row.input,
        ownerId: input.ownerId,
        generation: row.generation,
        leaseExpiresAt: row.lease_expires_at,
      }
}

export interface ClaimFence {
  readonly ownerId: string
  readonly generation: number
}

export type RenewClaimOutcome =
  | { readonly kind: 'renewed'; readonly leaseExpiresAt: Date }
  /** Another claim holds the run, it was settled, or this claim's lease already expired. */
  | { readonly kind: 'stale_claim' }
  | { readonly kind: 'missing' }

/**
 * Extend a claimed continuation run's lease. Applies only while the run is `active` under this
 * fence with a live lease (an expired claim cannot revive itself). The delivery's claim deadline
 * is left alone: past it, reconciliation retains the claim for as long as this lease stays live.
 * Outcomes: renewed | stale_claim | missing. Retry safety: renewing twice only extends the lease.
 */
export async function renewContinuationClaim(
  db: Db,
  input: {
    readonly namespaceId: string
    readonly runId: string
    readonly fence: ClaimFence
    readonly leaseMs: number
  },
): Promise<RenewClaimOutcome> {
  const result = await sql<{ renewed: boolean; lease_expires_at: Date | null }>`
    with u as (
      update runs
      set lease_expires_at = now() + ${input.leaseMs} * interval '1 millisecond'
      where id = ${input.runId}::uuid and namespace_id = ${input.namespaceId}
        and trigger_type = 'async_subagent_result' and status = 'active'
        and owner_id = ${input.fence.ownerId} and owner_generation = ${input.fence.generation}
        and lease_expires_at > now()
      returning lease_expires_at
    )
    select true as renewed, lease_expires_at from u
    union all
    select false, null from runs
    where id = ${input.runId}::uuid and namespace_id = ${input.namespaceId}
      and trigger_type = 'async_subagent_result' and not exists (select 1 from u)
  `.execute(db)
  const row = result.rows[0]
  if (row === undefined) return { kind: 'missing' }
  if (!row.renewed || row.lease_expires_at === null) return { kind: 'stale_claim' }
  return { kind: 'renewed', leaseExpiresAt: row.lease_expires_at }
}
