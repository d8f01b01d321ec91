import { sql, type Kysely } from 'kysely'

/**
 * When each running attempt's owner last proved it was alive: the claim and every lease renewal
 * set `heartbeat_at` in the statement that moves `lease_expires_at`, so it costs no statement of
 * its own. Operators read its age (the ledger dashboard); leases are still decided by
 * `lease_expires_at` alone. Attempts claimed before this migration have none until their next
 * renewal.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`alter table attempts add column heartbeat_at timestamptz`.execute(db)
}
