import { sql, type Kysely } from 'kysely'

/**
 * Idempotent acceptance: a caller's `Idempotency-Key`, unique per session, and the digest of the
 * request it was first used with (a reuse with another request is refused, not merged).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    alter table attempts add column idempotency_key text, add column request_digest text;
    create unique index attempts_idempotency_idx on attempts (session_id, idempotency_key)
      where idempotency_key is not null;
  `.execute(db)
}
