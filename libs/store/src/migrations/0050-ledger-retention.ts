import { sql, type Kysely } from 'kysely'

/**
 * Retention of the ledger itself: a namespace's history older than its retention is removed in
 * small batches by the reconciler (`removeExpiredHistory`), so the tables every statement reads
 * stop growing with time.
 *
 * - `namespaces.ledger_retention_ms`: the namespace's own retention; null takes the fleet's
 *   default setting.
 * - `attempts_namespace_terminal_idx`: a namespace's terminal attempts by terminal time (and id,
 *   the tiebreak of a batch's cursor), so a batch reads the oldest of one namespace whatever the
 *   others keep.
 * - `attempts_agent_idx`: an agent's attempts, so a batch checks that nothing of an agent is live
 *   or young before it removes the agent with its whole history.
 * - `runs_ended_idx`: ended host runs by the time they ended, for the removal of old runs.
 * - the continuation indexes by run: a run is removed only once no continuation names it.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    alter table namespaces add column ledger_retention_ms bigint
      constraint namespaces_ledger_retention_positive check (ledger_retention_ms > 0);
    create index attempts_namespace_terminal_idx
      on attempts (namespace_id, terminal_at, id) where terminal_at is not null;
    create index attempts_agent_idx on attempts (agent_id);
    create index runs_ended_idx on runs (namespace_id, settled_at, id)
      where settled_at is not null and cause_attempt_id is null;
    create index continuations_parent_run_idx on continuations (parent_run_id);
    create index continuations_consumer_run_idx on continuations (consumer_run_id)
      where consumer_run_id is not null;
    create index continuations_suppression_run_idx on continuations (suppression_run_id)
      where suppression_run_id is not null;
  `.execute(db)
}
