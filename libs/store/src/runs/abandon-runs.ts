import { sql } from 'kysely'
import type { Db } from '../db.ts'
import { reconcileDeliveries, type DeliveryOutcome } from '../continuations/reconcile-deliveries.ts'
import type { RunRow } from '../schema.ts'
import { toRunRecord, type RunRecord } from './get-run.ts'

export interface AbandonedRuns {
  readonly runs: readonly RunRecord[]
  /** What reconciliation did to the deliveries the runs held or had taken. */
  readonly deliveries: readonly DeliveryOutcome[]
}

/**
 * Ends host runs whose lease expired on the database clock as `abandoned`, then reconciles what
 * they held in the same transaction: held results become continuations (or are suppressed, as
 * for any late result), an explicit run's results are suppressed again and consumable once more.
 * Inputs: which runs — one run of a namespace (its own late heartbeat or end found its
 * lease expired), or the reconciler's sweep of at most `limit`, oldest lease first. A host run is
 * an active run without an owner (a claimed continuation run has its claim's owner, and is
 * released by reconciliation instead). Runs another transaction holds are skipped.
 * Outcome: the runs abandoned and the delivery actions. Retry safety: an abandoned run is no
 * longer active, so a repeat finds nothing.
 */
export async function abandonExpiredRuns(
  db: Db,
  which: { readonly namespaceId: string; readonly runId: string } | { readonly limit: number },
): Promise<AbandonedRuns> {
  return db.transaction().execute(async (trx) => {
    const abandoned = await sql<RunRow>`
      with r as (
        select id from runs
        where status = 'active' and owner_id is null and lease_expires_at <= now()
          ${
            'runId' in which
              ? sql`and id = ${which.runId}::uuid and namespace_id = ${which.namespaceId}`
              : sql``
          }
        order by lease_expires_at
        limit ${'limit' in which ? which.limit : 1}
        for update skip locked
      )
      update runs set status = 'abandoned', settled_at = now(), lease_expires_at = null
      from r where runs.id = r.id
      returning runs.*
    `.execute(trx)
    if (abandoned.rows.length === 0) return { runs: [], deliveries: [] }
    const deliveries = await reconcileDeliveries(trx, {
      consumerRunIds: abandoned.rows.map((r) => r.id),
    })
    return { runs: abandoned.rows.map(toRunRecord), deliveries }
  })
}
