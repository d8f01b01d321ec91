import { sql, type Kysely } from 'kysely'

/**
 * The webhook outbox's enqueue keeps its plan.
 *
 * `baton_enqueue_webhook` runs once per attempt that becomes terminal (the row trigger of
 * 0030-webhooks), so a batch of terminal commits calls it once per row. As a `language sql`
 * function holding an `insert`, it was parsed and planned again on every call: for a burst of
 * cancels, that was most of what each aborted commit cost the database, whether or not the
 * namespace had any webhook. In PL/pgSQL the same statement is planned once per connection and its
 * plan reused, so a terminal commit in a namespace without webhooks costs one index probe of
 * `webhooks`. Same signature, same statement, same outcome.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    create or replace function baton_enqueue_webhook(
      p_namespace text, p_session text, p_event text, p_attempt uuid
    ) returns void language plpgsql as $f$
    begin
      insert into webhook_deliveries (id, namespace_id, session_id, webhook_id, event_type, attempt_id)
      select case p_event when 'attempt.terminal' then 'msg_attempt_terminal_'
                          else 'msg_continuation_' end || replace(p_attempt::text, '-', ''),
             p_namespace, p_session, w.id, p_event, p_attempt
      from webhooks w
      where w.namespace_id = p_namespace and coalesce(w.session_id, '') in (p_session, '')
      order by w.session_id is null
      limit 1
      on conflict (id) do nothing;
    end
    $f$;
  `.execute(db)
}
