import { sql, type Kysely } from 'kysely'

/**
 * The distribution key in every session-scoped key, so that a sharding extension (Citus) accepts
 * the ledger as it is: a session's rows hash to one shard by their session id
 * (`DISTRIBUTED_TABLES` in `distribution.ts`), and the shared tables are reference tables.
 *
 * - `session_id` on the tables that named their session only through a parent: transitions,
 *   steering messages, history events, artifacts, uploads and chunks; backfilled from the parent
 *   and not null. A row whose parent is gone cannot be placed on a shard and nothing reads it (every
 *   read goes through the parent), so it is removed.
 * - Every primary key, unique constraint and foreign key between session-scoped tables gains
 *   `session_id`, as the last column: a lookup by id alone (a statement whose caller has no
 *   session) still walks the same index from its first column. No uniqueness changes meaning: each
 *   key's row lives in one session already (an agent, a cause attempt, an artifact's attempt), and
 *   ids are random UUIDs.
 * - The two `on conflict` targets that named a key (admission's and the webhook outbox's) name the
 *   new one. The functions are rewritten from their current definitions, replacing only the
 *   target, so whatever else a migration before this one changed in them stays.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    alter table attempt_transitions add column session_id text;
    update attempt_transitions t set session_id = a.session_id from attempts a where a.id = t.attempt_id;
    delete from attempt_transitions where session_id is null;
    alter table attempt_transitions alter column session_id set not null;

    alter table attempt_messages add column session_id text;
    update attempt_messages m set session_id = a.session_id from attempts a where a.id = m.attempt_id;
    alter table attempt_messages alter column session_id set not null;

    alter table agent_context_events add column session_id text;
    update agent_context_events e set session_id = ag.session_id from agents ag
      where ag.id = e.agent_id;
    alter table agent_context_events alter column session_id set not null;

    alter table artifacts add column session_id text;
    update artifacts r set session_id = a.session_id from attempts a where a.id = r.attempt_id;
    alter table artifacts alter column session_id set not null;

    alter table artifact_uploads add column session_id text;
    update artifact_uploads u set session_id = a.session_id from attempts a where a.id = u.attempt_id;
    delete from artifact_uploads where session_id is null;
    alter table artifact_uploads alter column session_id set not null;

    -- A bound upload's row is gone (its commit deleted it): its chunks are the artifact's.
    alter table artifact_chunks add column session_id text;
    update artifact_chunks c set session_id = r.session_id from artifacts r
      where r.upload_id = c.upload_id;
    update artifact_chunks c set session_id = u.session_id from artifact_uploads u
      where u.id = c.upload_id and c.session_id is null;
    delete from artifact_chunks where session_id is null;
    alter table artifact_chunks alter column session_id set not null;

    alter table attempts drop constraint attempts_agent_id_fkey,
      drop constraint attempts_artifact_id_fkey,
      drop constraint attempts_parent_run_id_fkey;
    alter table attempt_messages drop constraint attempt_messages_attempt_id_fkey;
    alter table agent_context_events drop constraint agent_context_events_agent_id_fkey,
      drop constraint agent_context_events_attempt_id_fkey;
    alter table runs drop constraint runs_cause_attempt_fkey;
    alter table continuations drop constraint continuations_attempt_id_fkey,
      drop constraint continuations_parent_run_id_fkey,
      drop constraint continuations_consumer_run_id_fkey,
      drop constraint continuations_suppression_run_id_fkey;
    alter table artifacts drop constraint artifacts_attempt_id_fkey;
    alter table webhook_deliveries drop constraint webhook_deliveries_attempt_id_fkey;

    alter table agents drop constraint agents_pkey, add primary key (id, session_id);
    alter table attempts drop constraint attempts_pkey, add primary key (id, session_id);
    alter table attempt_transitions drop constraint attempt_transitions_pkey,
      add primary key (id, session_id);
    alter table attempt_messages drop constraint attempt_messages_pkey,
      add primary key (attempt_id, sequence, session_id);
    alter table agent_context_events drop constraint agent_context_events_pkey,
      add primary key (agent_id, seq, session_id);
    alter table runs drop constraint runs_pkey, add primary key (id, session_id),
      drop constraint runs_cause_attempt_key,
      add constraint runs_cause_attempt_key unique (cause_attempt_id, session_id);
    alter table continuations drop constraint continuations_pkey,
      add primary key (attempt_id, session_id);
    alter table artifacts drop constraint artifacts_pkey, add primary key (id, session_id),
      drop constraint artifacts_attempt_id_key,
      add constraint artifacts_attempt_id_key unique (attempt_id, session_id);
    alter table artifact_uploads drop constraint artifact_uploads_pkey,
      add primary key (id, session_id);
    alter table artifact_chunks drop constraint artifact_chunks_pkey,
      add primary key (upload_id, seq, session_id);
    alter table webhook_deliveries drop constraint webhook_deliveries_pkey,
      add primary key (id, session_id);

    drop index attempts_one_active_per_agent;
    create unique index attempts_one_active_per_agent on attempts (agent_id, session_id)
      where status <> 'terminal';

    alter table attempts
      add constraint attempts_agent_fkey foreign key (agent_id, session_id)
        references agents (id, session_id),
      add constraint attempts_artifact_fkey foreign key (artifact_id, session_id)
        references artifacts (id, session_id),
      add constraint attempts_parent_run_fkey foreign key (parent_run_id, session_id)
        references runs (id, session_id);
    alter table attempt_messages add constraint attempt_messages_attempt_fkey
      foreign key (attempt_id, session_id) references attempts (id, session_id);
    alter table agent_context_events
      add constraint agent_context_events_agent_fkey foreign key (agent_id, session_id)
        references agents (id, session_id),
      add constraint agent_context_events_attempt_fkey foreign key (attempt_id, session_id)
        references attempts (id, session_id);
    alter table runs add constraint runs_cause_attempt_fkey
      foreign key (cause_attempt_id, session_id) references attempts (id, session_id);
    alter table continuations
      add constraint continuations_attempt_fkey foreign key (attempt_id, session_id)
        references attempts (id, session_id),
      add constraint continuations_parent_run_fkey foreign key (parent_run_id, session_id)
        references runs (id, session_id),
      add constraint continuations_consumer_run_fkey foreign key (consumer_run_id, session_id)
        references runs (id, session_id) deferrable initially deferred,
      add constraint continuations_suppression_run_fkey foreign key (suppression_run_id, session_id)
        references runs (id, session_id);
    alter table artifacts add constraint artifacts_attempt_fkey
      foreign key (attempt_id, session_id) references attempts (id, session_id);
    alter table webhook_deliveries add constraint webhook_deliveries_attempt_fkey
      foreign key (attempt_id, session_id) references attempts (id, session_id);
  `.execute(db)

  await retarget(
    db,
    'baton_admit_continuation',
    'on conflict (attempt_id) do nothing',
    'on conflict (attempt_id, session_id) do nothing',
  )
  await retarget(
    db,
    'baton_enqueue_webhook',
    'on conflict (id) do nothing',
    'on conflict (id, session_id) do nothing',
  )
}

/** Rewrites a function's current definition with one `on conflict` target replaced. */
async function retarget(db: Kysely<unknown>, fn: string, from: string, to: string): Promise<void> {
  const found = await sql<{ definition: string }>`
    select pg_get_functiondef(p.oid) as definition from pg_proc p
    where p.proname = ${fn} and p.pronamespace = 'public'::regnamespace
  `.execute(db)
  const [row, ...others] = found.rows
  if (row === undefined || others.length > 0 || !row.definition.includes(from)) {
    throw new Error(`0070: ${fn} has no single definition with "${from}"`)
  }
  await sql.raw(row.definition.replace(from, to)).execute(db)
}
