import { sql } from 'kysely'
import type { Db } from '../db.ts'
import type { DeliveryState } from '../schema.ts'

/** The delivery states a continuation is open in: counted at every scrape. */
export type OpenDeliveryState = Extract<DeliveryState, 'held' | 'pending' | 'claimed'>

/**
 * Open continuations by delivery state (held, pending, claimed; a state with none is absent),
 * counted from `continuations_open_state_idx`: the cost follows the open deliveries, never the
 * delivered and suppressed history (those are counted as they happen, by
 * `baton_continuation_deliveries_total`). Read-only; for metrics at scrape time.
 */
export async function countContinuations(
  db: Db,
): Promise<{ state: OpenDeliveryState; count: number }[]> {
  const result = await sql<{ state: OpenDeliveryState; count: number }>`
    select state, count(*)::int as count from continuations
    where state in ('held', 'pending', 'claimed')
    group by state order by state
  `.execute(db)
  return result.rows
}
