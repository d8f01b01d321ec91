import { sql, type Kysely } from 'kysely'

/**
 * Nested delegations: a child may delegate children of its own.
 *
 * - `attempts.parent_attempt_id`: the attempt that made the delegation (an attempt of the same
 *   namespace and session, not terminal when it was accepted), next to `parent_run_id` (the run
 *   that made it). A hosted run's attempt has the run's id, so "the children of a run" are the
 *   attempts naming it either way, and their descendants follow `parent_attempt_id` down.
 * - No foreign key: retention deletes old attempts in bounded batches, and a parent deleted before
 *   its children must not refuse the batch. The link is evidence, read by cascade cancels.
 * - `attempts_parent_attempt_idx`: a cascade walks the tree one level per step through it.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    alter table attempts add column parent_attempt_id uuid;
    create index attempts_parent_attempt_idx on attempts (parent_attempt_id)
      where parent_attempt_id is not null;
  `.execute(db)
}
