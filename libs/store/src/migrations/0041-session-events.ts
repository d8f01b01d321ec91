import { sql, type Kysely } from 'kysely'

/**
 * A hosted session's event log: one ordered, durable stream of the parent's records, its
 * children's records (attributed to their source), their lifecycle and the session's runs.
 *
 * - `session_events`: one row per event, `seq` counting from 1 per session. The seq is taken from
 *   the session's `session_event_counters` row, whose lock is held until the writing transaction
 *   ends: a session's events commit in seq order, so a reader that has seen seq N never later
 *   finds an event below N (what makes a resume from `Last-Event-ID` lose nothing).
 * - Written by triggers, in the transaction of the fact they record (only for hosted sessions):
 *   a history event appended (the parent's own: `record` of its run; a child's: `record` with its
 *   source — agent id, name, task id, attempt id, parent run id and the child's own seq); a child
 *   accepted (`subagent_started`) and made terminal (`subagent_completed` / `subagent_failed`,
 *   with its outcome); a run queued, started and ended (`run_queued`, `run_started`, `run_ended`).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    create table session_event_counters (
      namespace_id text not null,
      session_id text not null,
      last_seq bigint not null,
      primary key (namespace_id, session_id)
    );
    create table session_events (
      namespace_id text not null,
      session_id text not null,
      seq bigint not null,
      kind text not null check (kind in ('record', 'subagent_started', 'subagent_completed',
                                         'subagent_failed', 'run_queued', 'run_started',
                                         'run_ended')),
      run_id uuid,
      source jsonb,
      payload jsonb not null,
      at timestamptz not null default now(),
      primary key (namespace_id, session_id, seq)
    );

    create function baton_session_event(p_ns text, p_session text, p_kind text, p_run uuid,
                                        p_source jsonb, p_payload jsonb)
    returns void language plpgsql as $f$
    declare
      v_seq bigint;
    begin
      insert into session_event_counters (namespace_id, session_id, last_seq)
      values (p_ns, p_session, 1)
      on conflict (namespace_id, session_id)
      do update set last_seq = session_event_counters.last_seq + 1
      returning last_seq into v_seq;
      insert into session_events (namespace_id, session_id, seq, kind, run_id, source, payload)
      values (p_ns, p_session, v_seq, p_kind, p_run, p_source, p_payload);
    end
    $f$;

    create function baton_hosted_session_of(p_ns text, p_session text) returns uuid
    language sql stable as $f$
      select parent_agent_id from sessions
      where namespace_id = p_ns and id = p_session and profile is not null
    $f$;

    create function baton_history_event() returns trigger language plpgsql as $f$
    declare
      a attempts;
      v_parent uuid;
    begin
      select * into a from attempts where id = new.attempt_id;
      v_parent := baton_hosted_session_of(a.namespace_id, a.session_id);
      if v_parent is null then return null; end if;
      if a.agent_id = v_parent then
        perform baton_session_event(a.namespace_id, a.session_id, 'record', a.id, null, new.event);
      else
        perform baton_session_event(a.namespace_id, a.session_id, 'record', a.parent_run_id,
          jsonb_build_object('kind', 'subagent', 'agentId', a.agent_id, 'name', a.name,
                             'taskId', a.id, 'attemptId', a.id, 'parentRunId', a.parent_run_id,
                             'childSeq', new.seq),
          new.event);
      end if;
      return null;
    end
    $f$;
    create trigger agent_context_events_session after insert on agent_context_events
      for each row execute function baton_history_event();

    create function baton_subagent_lifecycle() returns trigger language plpgsql as $f$
    declare
      v_kind text;
    begin
      if new.parent_run_id is null
         or baton_hosted_session_of(new.namespace_id, new.session_id) is null then
        return null;
      end if;
      if tg_op = 'INSERT' then
        v_kind := 'subagent_started';
      elsif new.status = 'terminal' and old.status <> 'terminal' then
        v_kind := case when new.stop_reason = 'completed' then 'subagent_completed'
                       else 'subagent_failed' end;
      else
        return null;
      end if;
      perform baton_session_event(new.namespace_id, new.session_id, v_kind, new.parent_run_id,
        null,
        jsonb_strip_nulls(jsonb_build_object(
          'taskId', new.id, 'name', new.name, 'agentId', new.agent_id, 'attemptId', new.id,
          'parentRunId', new.parent_run_id, 'outcome', new.stop_reason,
          'failureCategory', new.failure_category)));
      return null;
    end
    $f$;
    -- Only children that name a parent run can be a hosted parent's children.
    create trigger attempts_subagent_started after insert on attempts
      for each row when (new.parent_run_id is not null)
      execute function baton_subagent_lifecycle();
    create trigger attempts_subagent_ended after update of status on attempts
      for each row when (old.status is distinct from new.status and new.parent_run_id is not null)
      execute function baton_subagent_lifecycle();

    create function baton_run_event() returns trigger language plpgsql as $f$
    declare
      v_kind text;
    begin
      if not new.hosted then return null; end if;
      if tg_op = 'INSERT' then v_kind := 'run_queued';
      elsif new.status = 'active' and old.status <> 'active' then v_kind := 'run_started';
      elsif new.status not in ('pending', 'active') and old.status in ('pending', 'active') then
        v_kind := 'run_ended';
      else return null;
      end if;
      perform baton_session_event(new.namespace_id, new.session_id, v_kind, new.id, null,
        jsonb_strip_nulls(jsonb_build_object('runId', new.id, 'triggerType', new.trigger_type,
          'status', new.status, 'causeAttemptId', new.cause_attempt_id)));
      return null;
    end
    $f$;
    create trigger runs_session_event after insert or update of status on runs
      for each row execute function baton_run_event();
  `.execute(db)
}
