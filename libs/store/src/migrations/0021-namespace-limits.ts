import { sql, type Kysely } from 'kysely'

/**
 * A namespace's limits, in the ledger: set through the admin API, read by every worker's artifact
 * commit in its own transaction, so every worker enforces the same limits from the next commit
 * on. A null limit means the processes' defaults apply (`ARTIFACT_MAX_BYTES`,
 * `NAMESPACE_ARTIFACT_MAX_BYTES`).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    alter table namespaces
      add column artifact_quota_bytes bigint check (artifact_quota_bytes >= 0),
      add column artifact_max_bytes bigint check (artifact_max_bytes >= 0);
  `.execute(db)
}
