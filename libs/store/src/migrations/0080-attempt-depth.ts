import { sql, type Kysely } from 'kysely'

/**
 * How deep in a chain of delegations an attempt is, kept so that a depth budget is one read.
 *
 * - `attempts.depth`: one more than its parent attempt's for a child naming one, 0 for the
 *   session parent's own attempts (a hosted run's, of the agent named `profile:<profile>`), so
 *   that a child naming a run's attempt is at depth 1 like one naming the run; null for every
 *   other attempt, which is at depth 1 (delegated by a run, a host or the session's parent).
 *   Null for the many so that their rows are no wider: a renewal updates a row in place only
 *   while its page has room. Set once, by the statement that accepts the attempt.
 * - Existing attempts get the same value: parents first, then their children, one level a step
 *   (a chain is as long as its deepest delegation, so this ends).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`alter table attempts add column depth smallint`.execute(db)
  await sql`update attempts set depth = 0 where starts_with(name, 'profile:')`.execute(db)
  for (;;) {
    const step = await sql`
      update attempts c set depth = coalesce(p.depth, 1) + 1
      from attempts p
      where c.parent_attempt_id is not null and p.id = c.parent_attempt_id
        and p.session_id = c.session_id and c.depth is distinct from coalesce(p.depth, 1) + 1
    `.execute(db)
    if (Number(step.numAffectedRows ?? 0n) === 0) break
  }
}
