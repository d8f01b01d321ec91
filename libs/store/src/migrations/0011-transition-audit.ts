import { sql, type Kysely } from 'kysely'

/**
 * The audit of state changes (`attempt_transitions`) names its attempt without a foreign key.
 *
 * Every audit row is written by the ledger statement that makes the change it records, from the
 * attempt rows that same statement inserts or updates (the accept, claim, commit, queued cancel
 * and process-loss statements insert from their own `returning`), and no attempt is ever deleted:
 * the key could never find an audit row without its attempt. It still cost what a key costs:
 * Postgres checks each inserted row by locking its attempt `for key share`, a query of its own
 * and a WAL record, three times per delegation (accept, claim, commit), each inside a statement
 * a caller waits for, and a submit-and-wait's latency showed it. The ledger audit of the tests,
 * bench and chaos checks what the key checked (`orphanTransitionAttempts` in
 * `@baton/testing/ledger-audit`).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  // The name Postgres gave the key that 0001 declared inline.
  await sql`alter table attempt_transitions drop constraint attempt_transitions_attempt_id_fkey`.execute(
    db,
  )
}
