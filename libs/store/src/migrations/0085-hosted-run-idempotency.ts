import { sql, type Kysely } from 'kysely'

/**
 * `Idempotency-Key` for hosted runs, as delegations have it (0003): a user run queued with a key
 * keeps the key and the digest of its request, and the unique index on (namespace, session, key)
 * lets one run per key exist. A retry after a lost answer finds the run its first request queued;
 * the same key with another request is refused. The key sits on the run, not on its attempt: a
 * queued run has no attempt until it starts, and a retry must find it before that.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    alter table runs add column idempotency_key text, add column request_digest text;
    create unique index runs_idempotency_idx on runs (namespace_id, session_id, idempotency_key)
      where idempotency_key is not null;
  `.execute(db)
}
