import { sql } from 'kysely'
import type { Db } from '../db.ts'
import { NotConsumable } from './not-consumable.ts'
import type { ClaimFence } from '../continuations/claim-continuation.ts'
import { reconcileDeliveries, type DeliveryAction } from '../continuations/reconcile-deliveries.ts'
import type { RunRow } from '../schema.ts'
import { toRunRecord, type RunRecord } from './get-run.ts'

export type RunSettlement = 'completed' | 'failed' | 'cancelled'

export interface SettleRunInput {
  readonly namespaceId: string
  readonly runId: string
  readonly status: RunSettlement
  /** Results held for this run that it consumed itself (by waiting on them); completed only. */
  readonly consumed?: readonly string[]
  /** The claim of a continuation run; absent for runs a host created. */
  readonly fence?: ClaimFence
}

export type SettleRunOutcome =
  | {
      readonly kind: 'settled'
      readonly run: RunRecord
      /** What reconciliation did to the deliveries the run held or claimed. */
      readonly deliveries: readonly { attemptId: string; action: DeliveryAction }[]
    }
  | { readonly kind: 'replayed'; readonly run: RunRecord }
  | { readonly kind: 'missing' }
  /** Already settled otherwise, or (without a fence) still pending. */
  | { readonly kind: 'not_active'; readonly run: RunRecord }
  /** A continuation run settled without its claim, or with a claim that is not current. */
  | { readonly kind: 'stale_claim' }
  | { readonly kind: 'not_consumable'; readonly attemptIds: readonly string[] }

/**
 * Settle a run, then reconcile the deliveries it consumes, in one transaction.
 * Inputs: the run, its end state, optionally the held results it consumed, and for a claimed
 * continuation run the claim's fence. The update applies only to an `active` run: a host's run
 * without a lease, or a continuation run under this fence with a live lease (an expired claim
 * cannot settle). Consumed results must be held for this run; they are delivered by it. Then
 * `reconcileDeliveries` decides every other delivery the run held or claimed (acknowledged,
 * admitted as a continuation, or suppressed naming this run): this handler never decides them
 * itself. Outcomes: settled | replayed | missing | not_active | stale_claim | not_consumable.
 * Retry safety: the same settlement again (same fence) is `replayed` and writes nothing.
 */
export async function settleRun(db: Db, input: SettleRunInput): Promise<SettleRunOutcome> {
  const consumed = [...new Set(input.consumed ?? [])]
  try {
    return await db.transaction().execute(async (trx): Promise<SettleRunOutcome> => {
      const fence = input.fence
      const applied = await sql<RunRow>`
        update runs
        set status = ${input.status}, settled_at = now(), lease_expires_at = null
        where id = ${input.runId}::uuid and namespace_id = ${input.namespaceId} and status = 'active'
          and ${
            fence === undefined
              ? sql`owner_id is null`
              : sql`owner_id = ${fence.ownerId} and owner_generation = ${fence.generation}
                    and lease_expires_at > now()`
          }
        returning *
      `.execute(trx)
      const row = applied.rows[0]
      if (row === undefined) return classify(trx, input)
      if (consumed.length > 0) {
        const delivered = await sql<{ attempt_id: string }>`
          update continuations set state = 'delivered', delivered_at = now()
          where attempt_id = any(${consumed}::uuid[]) and consumer_run_id = ${input.runId}::uuid
            and state = 'held'
          returning attempt_id
        `.execute(trx)
        const got = new Set(delivered.rows.map((r) => r.attempt_id))
        const refused = consumed.filter((id) => !got.has(id))
        if (refused.length > 0 || input.status !== 'completed') throw new NotConsumable(refused)
      }
      const deliveries = await reconcileDeliveries(trx, { consumerRunId: input.runId })
      return { kind: 'settled', run: toRunRecord(row), deliveries }
    })
  } catch (error) {
    if (error instanceof NotConsumable)
      return { kind: 'not_consumable', attemptIds: error.attemptIds }
    throw error
  }
}

/** Why a settlement did not apply, on a fresh snapshot. */
async function classify(db: Db, input: SettleRunInput): Promise<SettleRunOutcome> {
  const row = await db
    .selectFrom('runs')
    .selectAll()
    .where('id', '=', input.runId)
    .where('namespace_id', '=', input.namespaceId)
    .executeTakeFirst()
  if (row === undefined) return { kind: 'missing' }
  const run = toRunRecord(row)
  const fence = input.fence
  const sameClaim =
    fence === undefined
      ? row.owner_id === null
      : row.owner_id === fence.ownerId && row.owner_generation === fence.generation
  if (!sameClaim) return { kind: 'stale_claim' }
  if (row.status === input.status) return { kind: 'replayed', run }
  // Under its own claim but not settled: the claim's lease expired.
  if (fence !== undefined && row.status === 'active') return { kind: 'stale_claim' }
  return { kind: 'not_active', run }
}
