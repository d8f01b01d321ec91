import { sql } from 'kysely'
import type { ClaimFence, DeliveredResult } from '@baton/contracts'
import type { Db } from '../db.ts'
import { NotConsumable } from './not-consumable.ts'
import {
  DELIVERY_COLUMNS,
  loadDeliveredResults,
  type DeliveryRow,
} from '../continuations/delivered-results.ts'
import { reconcileDeliveries, type DeliveryOutcome } from '../continuations/reconcile-deliveries.ts'
import type { RunRow } from '../schema.ts'
import { abandonExpiredRuns } from './abandon-runs.ts'
import { toRunRecord, type RunRecord } from './get-run.ts'

/** How a run ends by its host's or its claim's word (`abandoned` is the lease's). */
export type RunEnd = 'completed' | 'failed' | 'cancelled'

export interface EndRunInput {
  readonly namespaceId: string
  readonly runId: string
  readonly status: RunEnd
  /** Results held for this run that it consumed itself (by waiting on them); completed only. */
  readonly consumed?: readonly string[]
  /** The claim of a continuation run; absent for runs a host created. */
  readonly fence?: ClaimFence
}

export type EndRunOutcome =
  | {
      readonly kind: 'ended'
      readonly run: RunRecord
      /** What reconciliation did to the deliveries the run held or claimed. */
      readonly deliveries: readonly DeliveryOutcome[]
      /** The held results it consumed, delivered with their receipts. */
      readonly consumed: readonly DeliveredResult[]
    }
  | {
      readonly kind: 'replayed'
      readonly run: RunRecord
      readonly consumed: readonly DeliveredResult[]
    }
  | { readonly kind: 'missing' }
  /** Ended otherwise, abandoned (its lease expired), or (without a fence) still pending. */
  | { readonly kind: 'not_active'; readonly run: RunRecord }
  /** A continuation run ended without its claim, or with a claim that is not current. */
  | { readonly kind: 'stale_claim' }
  | { readonly kind: 'not_consumable'; readonly attemptIds: readonly string[] }

/**
 * End a run, then reconcile the deliveries it consumes, in one transaction.
 * Inputs: the run, its end, optionally the held results it consumed, and for a claimed
 * continuation run the claim's fence. The update applies only to an `active` run with a live
 * lease on the database clock: a host's run (no owner), or a continuation run under this fence (an
 * expired lease cannot end a run; a host run found so is abandoned here, as the reconciler would).
 * Consumed results must be held for this run; they are delivered by it, and answered with their
 * receipts and resolved content (`loadDeliveredResults`). Then `reconcileDeliveries` decides every
 * other delivery the run held or claimed (acknowledged, admitted as a continuation, or suppressed
 * naming this run): this handler never decides them itself.
 * Outcomes: ended | replayed | missing | not_active | stale_claim | not_consumable.
 * Retry safety: the same end again (same fence) is `replayed`, writes nothing and answers the same
 * consumed results.
 */
export async function endRun(db: Db, input: EndRunInput): Promise<EndRunOutcome> {
  const consumed = [...new Set(input.consumed ?? [])]
  let ended: { run: RunRecord; deliveries: DeliveryOutcome[]; consumed: DeliveryRow[] }
  try {
    const applied = await db.transaction().execute(async (trx) => {
      const fence = input.fence
      const updated = await sql<RunRow>`
        update runs
        set status = ${input.status}, settled_at = now(), lease_expires_at = null
        where id = ${input.runId}::uuid and namespace_id = ${input.namespaceId}
          and status = 'active' and lease_expires_at > now()
          and ${
            fence === undefined
              ? sql`owner_id is null`
              : sql`owner_id = ${fence.claimToken} and owner_generation = ${fence.generation}`
          }
        returning *
      `.execute(trx)
      const row = updated.rows[0]
      if (row === undefined) return undefined
      let delivered: DeliveryRow[] = []
      if (consumed.length > 0) {
        const result = await sql<DeliveryRow>`
          update continuations set state = 'delivered', delivered_at = now()
          where attempt_id = any(${consumed}::uuid[]) and consumer_run_id = ${input.runId}::uuid
            and state = 'held'
          returning ${sql.join(DELIVERY_COLUMNS.map((c) => sql.ref(c)))}
        `.execute(trx)
        delivered = result.rows
        const got = new Set(delivered.map((r) => r.attempt_id))
        const refused = consumed.filter((id) => !got.has(id))
        if (refused.length > 0 || input.status !== 'completed') throw new NotConsumable(refused)
      }
      const deliveries = await reconcileDeliveries(trx, { consumerRunIds: [input.runId] })
      return { run: toRunRecord(row), deliveries, consumed: delivered }
    })
    if (applied === undefined) return await classify(db, input)
    ended = applied
  } catch (error) {
    if (error instanceof NotConsumable)
      return { kind: 'not_consumable', attemptIds: error.attemptIds }
    throw error
  }
  return {
    kind: 'ended',
    run: ended.run,
    deliveries: ended.deliveries,
    consumed: await loadDeliveredResults(db, input.namespaceId, inOrder(ended.consumed, consumed)),
  }
}

/** Why an end did not apply, on a fresh snapshot. */
async function classify(db: Db, input: EndRunInput): Promise<EndRunOutcome> {
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
      : row.owner_id === fence.claimToken && row.owner_generation === fence.generation
  if (!sameClaim) return { kind: 'stale_claim' }
  if (row.status === input.status)
    return { kind: 'replayed', run, consumed: await heldConsumed(db, input) }
  if (row.status === 'active') {
    // Under its own claim but not ended: the claim's lease expired.
    if (fence !== undefined) return { kind: 'stale_claim' }
    // A host run whose lease expired: abandoned now.
    const { runs } = await abandonExpiredRuns(db, input)
    return { kind: 'not_active', run: runs[0] ?? run }
  }
  return { kind: 'not_active', run }
}

/**
 * The held results a completed run consumed, for the answer of its replay: delivered to the run
 * they were held for (a continuation or an explicit run never consumes a result it was the parent
 * of).
 */
async function heldConsumed(db: Db, input: EndRunInput): Promise<DeliveredResult[]> {
  if (input.status !== 'completed') return []
  const rows = await db
    .selectFrom('continuations')
    .select(DELIVERY_COLUMNS)
    .where('consumer_run_id', '=', input.runId)
    .where('parent_run_id', '=', input.runId)
    .where('state', '=', 'delivered')
    .where('namespace_id', '=', input.namespaceId)
    .orderBy('attempt_id')
    .execute()
  return loadDeliveredResults(db, input.namespaceId, rows)
}

/** Rows in the order their attempts were named. */
function inOrder(rows: readonly DeliveryRow[], attemptIds: readonly string[]): DeliveryRow[] {
  const byId = new Map(rows.map((r) => [r.attempt_id, r]))
  return attemptIds.flatMap((id) => byId.get(id) ?? [])
}
