import { sql, type Kysely } from 'kysely'

/**
 * Push delivery.
 *
 * - `webhooks`: at most one per namespace (`session_id` null) and one per session; a session's own
 *   webhook takes its events, the namespace's takes the rest. The secret is a Standard Webhooks
 *   `whsec_` secret (the worker signs with it; it is shown once, when registered).
 * - `webhook_deliveries`: the outbox. One row per event and attempt, its primary key the stable
 *   `webhook-id` every try carries (`msg_attempt_terminal_<attempt>`,
 *   `msg_continuation_<attempt>`), written by triggers in the statement that makes the event
 *   happen: an attempt's move to `terminal`, and a continuation's move to `pending` (admitted; a
 *   released claim moves it there again, and the id's uniqueness keeps the one row). A worker takes
 *   due rows under a fenced lease (`owner_id`, `owner_generation`, `next_try_at` as the lease's
 *   end while `sending`); `webhook_deliveries_due_idx` serves that take.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    create table webhooks (
      id uuid primary key,
      namespace_id text not null references namespaces (id),
      session_id text,
      url text not null,
      secret text not null,
      created_at timestamptz not null default now(),
      updated_at timestamptz not null default now()
    );
    create unique index webhooks_scope_key on webhooks (namespace_id, (coalesce(session_id, '')));

    create table webhook_deliveries (
      id text primary key,
      namespace_id text not null,
      session_id text not null,
      webhook_id uuid references webhooks (id) on delete set null,
      event_type text not null check (event_type in ('attempt.terminal', 'continuation.admitted')),
      attempt_id uuid not null references attempts (id),
      state text not null default 'pending'
        check (state in ('pending', 'sending', 'delivered', 'failed', 'superseded')),
      tries integer not null default 0,
      owner_id text,
      owner_generation integer not null default 0,
      next_try_at timestamptz default now(),
      created_at timestamptz not null default now(),
      delivered_at timestamptz,
      last_status integer,
      last_error text
    );
    create index webhook_deliveries_due_idx on webhook_deliveries (next_try_at)
      where state in ('pending', 'sending');
    create index webhook_deliveries_session_idx
      on webhook_deliveries (namespace_id, session_id, created_at);
    create index webhook_deliveries_namespace_idx on webhook_deliveries (namespace_id, created_at);

    -- One outbox row for an event, to the session's webhook or else the namespace's; none when
    -- neither exists. Read from webhooks_scope_key (two probes).
    create function baton_enqueue_webhook(
      p_namespace text, p_session text, p_event text, p_attempt uuid
    ) returns void language sql as $f$
      insert into webhook_deliveries (id, namespace_id, session_id, webhook_id, event_type, attempt_id)
      select case p_event when 'attempt.terminal' then 'msg_attempt_terminal_'
                          else 'msg_continuation_' end || replace(p_attempt::text, '-', ''),
             p_namespace, p_session, w.id, p_event, p_attempt
      from webhooks w
      where w.namespace_id = p_namespace and coalesce(w.session_id, '') in (p_session, '')
      order by w.session_id is null
      limit 1
      on conflict (id) do nothing
    $f$;

    create function baton_attempt_terminal_webhook() returns trigger language plpgsql as $f$
    begin
      perform baton_enqueue_webhook(new.namespace_id, new.session_id, 'attempt.terminal', new.id);
      return null;
    end
    $f$;
    create trigger attempts_terminal_webhook
      after update of status on attempts
      for each row
      when (new.status = 'terminal' and old.status <> 'terminal')
      execute function baton_attempt_terminal_webhook();

    create function baton_continuation_webhook() returns trigger language plpgsql as $f$
    begin
      perform baton_enqueue_webhook(
        new.namespace_id, new.session_id, 'continuation.admitted', new.attempt_id);
      return null;
    end
    $f$;
    create trigger continuations_pending_webhook_insert
      after insert on continuations
      for each row
      when (new.state = 'pending')
      execute function baton_continuation_webhook();
    create trigger continuations_pending_webhook_update
      after update of state on continuations
      for each row
      when (new.state = 'pending' and old.state <> 'pending')
      execute function baton_continuation_webhook();
  `.execute(db)
}
