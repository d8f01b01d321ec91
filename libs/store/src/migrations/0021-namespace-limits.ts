import { sql, type Kysely } from 'kysely'

/**
 * A namespace's limits, in the ledger: set through the admin API, read by every worker's commit
 * in its own transaction, so every worker enforces the same limits from the next commit on. A
 * null limit means the processes' defaults apply (`ARTIFACT_MAX_BYTES`,
 * `NAMESPACE_ARTIFACT_MAX_BYTES`, `AGENT_HISTORY_MAX_BYTES`). Each history event records its
 * agent's history size so far, which a commit appending to it checks against the limit.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    alter table namespaces
      add column artifact_quota_bytes bigint check (artifact_quota_bytes >= 0),
      add column artifact_max_bytes bigint check (artifact_max_bytes >= 0),
      add column agent_history_max_bytes bigint check (agent_history_max_bytes >= 0);

    -- Each event carries its agent's history size up to and including it (the JSON text of each
    -- event as the worker sends it), so a commit reads the size from the agent's last event by
    -- primary key, and updates no agent row. History from before is counted as Postgres prints
    -- it, which is never shorter.
    alter table agent_context_events add column total_bytes bigint not null default 0;
    update agent_context_events e set total_bytes = s.total
    from (select agent_id, seq,
                 sum(octet_length(event::text)) over (partition by agent_id order by seq) as total
          from agent_context_events) s
    where s.agent_id = e.agent_id and s.seq = e.seq;
  `.execute(db)
}
