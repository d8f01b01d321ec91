import { sql } from 'kysely'
import type { ClaimFence, DeliveredResult } from '@baton/contracts'
import type { Db } from '../db.ts'
import { loadDeliveredResults, type DeliveryRow } from './delivered-results.ts'
import { reconcileDeliveries } from './reconcile-deliveries.ts'

export interface ClaimContinuationInput {
  readonly namespaceId: string
  readonly sessionId: string
  /** Minted by the caller for this claim: the owner half of the fence. */
  readonly claimToken: string
  readonly leaseMs: number
  /**
   * First release the session's claims whose deadline passed (a consumer that lost its lease),
   * so one can be taken now rather than after the reconciler's next sweep. A claim does it once,
   * before its first try; a try after a bell needs not (whoever rang released what it released).
   */
  readonly releaseLapsed?: boolean
  /** Claim this attempt's continuation only (a webhook delivery names the one it carries). */
  readonly attemptId?: string
}

/** A continuation a consumer now holds: its run, the delivered result, and the claim's fence. */
export interface ClaimedContinuation extends DeliveredResult {
  readonly runId: string
  readonly fence: ClaimFence
  readonly leaseExpiresAt: Date
}

/**
 * Claim the next admitted continuation of a session (oldest first), in one statement read from
 * indexes (`continuations_pending_idx`, then the run and the delivery by primary key): takes one
 * `pending` delivery, skipping rows another claimer holds; its run becomes `active` under
 * (claim token, generation + 1) with a lease of `leaseMs` on the database clock, and the delivery
 * `claimed` with that generation and a deadline at the lease's end. The claimed result is then
 * resolved as every delivery is (`loadDeliveredResults`).
 * With `attemptId`, that attempt's continuation only (by primary key), if it is pending.
 * Outcome: the claimed continuation, or `undefined` when none is pending.
 * Retry safety: a retried claim takes another continuation (or none); an abandoned claim is
 * released by reconciliation once its lease and deadline expired.
 */
export async function claimContinuation(
  db: Db,
  input: ClaimContinuationInput,
): Promise<ClaimedContinuation | undefined> {
  if (input.releaseLapsed === true) {
    await reconcileDeliveries(db, {
      namespaceId: input.namespaceId,
      sessionId: input.sessionId,
      lapsed: true,
    })
  }
  const result = await sql<
    DeliveryRow & { run_id: string; generation: number; lease_expires_at: Date }
  >`
    with c as (
      select attempt_id, consumer_run_id from continuations
      where namespace_id = ${input.namespaceId} and session_id = ${input.sessionId}
        and state = 'pending'
        ${input.attemptId === undefined ? sql`` : sql`and attempt_id = ${input.attemptId}::uuid`}
      order by admitted_at, attempt_id
      limit 1
      for update skip locked
    ), r as (
      update runs
      set status = 'active', owner_id = ${input.claimToken},
          owner_generation = owner_generation + 1,
          lease_expires_at = now() + ${input.leaseMs} * interval '1 millisecond'
      from c
      where runs.id = c.consumer_run_id and runs.status = 'pending'
      returning runs.id, runs.owner_generation, runs.lease_expires_at, c.attempt_id
    ), d as (
      update continuations
      set state = 'claimed', claim_generation = r.owner_generation,
          claim_deadline = r.lease_expires_at
      from r
      -- By primary key alone: \`c\` holds this row locked, as it found it (pending).
      where continuations.attempt_id = r.attempt_id
      returning continuations.attempt_id, continuations.receipt, continuations.input,
                continuations.input_digest, continuations.input_embedded_content
    )
    select r.id as run_id, d.attempt_id, d.receipt, d.input, d.input_digest,
           d.input_embedded_content, r.owner_generation as generation, r.lease_expires_at
    from d join r on r.attempt_id = d.attempt_id
  `.execute(db)
  const row = result.rows[0]
  if (row === undefined) return undefined
  const [delivered] = await loadDeliveredResults(db, input.namespaceId, [row])
  if (delivered === undefined) throw new Error('a claimed continuation was not resolved')
  return {
    ...delivered,
    runId: row.run_id,
    fence: { claimToken: input.claimToken, generation: row.generation },
    leaseExpiresAt: row.lease_expires_at,
  }
}
