import { sql, type Kysely } from 'kysely'

/**
 * Every key a retention batch removes rows by is indexed on the side that names it.
 *
 * When a batch deletes an attempt, Postgres checks each foreign key naming attempts for rows that
 * still name it, and the batch itself deletes an attempt's webhook deliveries by attempt; the same
 * for an artifact it deletes. Without an index on the naming column, each of those checks reads
 * the whole naming table: once per attempt removed, a cost that follows the history kept (every
 * delivered webhook event, every attempt), not the batch.
 *
 * - `webhook_deliveries_attempt_idx`: an attempt's webhook deliveries (session-level events name
 *   no attempt and are not in it).
 * - `attempts_artifact_idx`: the attempt whose result an artifact holds (most attempts hold none).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    create index webhook_deliveries_attempt_idx on webhook_deliveries (attempt_id)
      where attempt_id is not null;
    create index attempts_artifact_idx on attempts (artifact_id) where artifact_id is not null;
  `.execute(db)
}
