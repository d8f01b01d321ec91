import { sql, type Kysely } from 'kysely'

/**
 * Attempts by the time they became terminal, so a read of the last hour (the ledger dashboard's
 * per-minute activity) reaches only that hour's terminals, however long the history. Only terminal
 * attempts have an entry: the terminal commit adds it, and an attempt that is queued or running
 * has none (those are found through their own partial indexes of 0001).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    create index attempts_terminal_at_idx on attempts (terminal_at) where terminal_at is not null
  `.execute(db)
}
