import { sql, type Kysely } from 'kysely'

/**
 * The tokens an attempt's child spent, as its terminal commit reported them.
 *
 * - `attempts.usage_tokens`: input and output tokens of the child's model calls; written only by
 *   the statement that makes the attempt terminal (a replayed commit applies nothing, so it is
 *   counted once), null when nothing was reported (a cancel before it ran, a process loss).
 *   A hosted session's tokens budget is the sum over its finished children.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`alter table attempts add column usage_tokens bigint`.execute(db)
}
