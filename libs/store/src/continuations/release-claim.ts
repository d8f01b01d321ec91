import { sql } from 'kysely'
import type { ClaimFence } from '@baton/contracts'
import type { Db } from '../db.ts'
import { reconcileDeliveries, type DeliveryOutcome } from './reconcile-deliveries.ts'

export type ReleaseClaimOutcome =
  | { readonly kind: 'released'; readonly deliveries: readonly DeliveryOutcome[] }
  /** Not the current claim, or its lease already ended (reconciliation releases it). */
  | { readonly kind: 'stale_claim' }

/**
 * Give a claimed continuation back before its lease ends, for a consumer that could not deliver
 * it (a webhook endpoint that did not acknowledge). Inputs: the continuation run and its claim's
 * fence. In one transaction, the run's lease and the delivery's deadline end now (fenced by the
 * claim, on a live lease), then `reconcileDeliveries` releases it as it releases any lease-lost
 * claim: pending again, the same run, claimed next under the next generation.
 * Outcomes: released | stale_claim. Retry safety: a repeat finds the claim no longer current
 * (`stale_claim`) and writes nothing.
 */
export async function releaseContinuationClaim(
  db: Db,
  input: { readonly namespaceId: string; readonly runId: string; readonly fence: ClaimFence },
): Promise<ReleaseClaimOutcome> {
  return db.transaction().execute(async (trx) => {
    const ended = await sql<{ cause_attempt_id: string }>`
      update runs set lease_expires_at = now()
      where id = ${input.runId}::uuid and namespace_id = ${input.namespaceId}
        and status = 'active' and lease_expires_at > now()
        and owner_id = ${input.fence.claimToken} and owner_generation = ${input.fence.generation}
      returning cause_attempt_id
    `.execute(trx)
    const run = ended.rows[0]
    if (run === undefined) return { kind: 'stale_claim' }
    await sql`
      update continuations set claim_deadline = now()
      where attempt_id = ${run.cause_attempt_id}::uuid and state = 'claimed'
        and claim_generation = ${input.fence.generation}
    `.execute(trx)
    const deliveries = await reconcileDeliveries(trx, { consumerRunIds: [input.runId] })
    return { kind: 'released', deliveries }
  })
}
