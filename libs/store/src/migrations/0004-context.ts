import { sql, type Kysely } from 'kysely'

/**
 * Durable agent history (context deltas). An attempt's events are appended in the same statement
 * as its terminal commit, so they become visible only once terminal persistence succeeded; the
 * primary key keeps each agent's history one gap-free sequence. The attempt row keeps the audit
 * binding of what it appended (base, count, digest), which is also part of its fingerprint.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    create table agent_context_events (
      agent_id uuid not null references agents (id),
      seq integer not null check (seq >= 0),
      attempt_id uuid not null references attempts (id),
      event jsonb not null,
      primary key (agent_id, seq)
    );
    create index agent_context_events_attempt_idx on agent_context_events (attempt_id);

    alter table attempts
      add column context_base integer,
      add column context_event_count integer,
      add column context_digest text;
  `.execute(db)
}
