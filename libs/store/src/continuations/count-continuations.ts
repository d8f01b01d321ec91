import { sql } from 'kysely'
import type { Db } from '../db.ts'
import type { DeliveryState } from '../schema.ts'

/**
 * Continuations in the ledger by delivery state (rows are never deleted, so their sum is every
 * admission so far). Read-only; for metrics at scrape time.
 */
export async function countContinuations(
  db: Db,
): Promise<{ state: DeliveryState; count: number }[]> {
  const result = await sql<{ state: DeliveryState; count: number }>`
    select state, count(*)::int as count from continuations group by state order by state
  `.execute(db)
  return result.rows
}
