import { sql, type Kysely } from 'kysely'

/**
 * Runs and exactly-once continuations.
 *
 * - `runs`: a session's parent turns (`user`, `async_subagent_result`, `explicit`). A run of
 *   trigger `async_subagent_result` names the attempt whose result it carries, and
 *   `runs_cause_attempt_key` allows one such run per attempt. Claimed runs carry a fenced lease
 *   (owner, generation, expiry on the database clock), like attempts.
 * - `attempts.parent_run_id`: the run that made the delegation (same namespace and session).
 * - `continuations`: one row per terminal attempt with a parent run (its primary key decides: a
 *   second admission for the same attempt is impossible, whatever path retries it). The row binds
 *   the typed cause to the digest of the canonical durable input the ledger derived itself, keeps
 *   the receipt text returned to every admission, and tracks delivery:
 *   held (for its active parent run) → pending (its continuation run waits for a consumer) →
 *   claimed (a consumer run holds it) → delivered, or suppressed with a reason and the run that
 *   caused it. A suppressed result can still be consumed once by an explicit run.
 * - `sessions.deleted_at`: the deletion fence. A deleted session admits nothing new and keeps
 *   every row as evidence.
 *
 * Admission is a trigger on the attempt's move to `terminal`, so every terminal path (a worker's
 * commit, a queued cancel, process loss) admits in its own statement, atomically with the terminal
 * outcome; the trigger's WHEN clause skips attempts without a parent run, which therefore pay
 * nothing. The canonical input and its digest are derived here, in SQL, by `baton_durable_input`
 * and `baton_continuation_digest` (the `baton.continuation.v1` member of the contracts digest
 * family); `continuationDigest` in `@baton/contracts` computes the same digest for verifiers.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    alter table sessions add column deleted_at timestamptz;

    create table runs (
      id uuid primary key,
      namespace_id text not null,
      session_id text not null,
      trigger_type text not null
        check (trigger_type in ('user', 'async_subagent_result', 'explicit')),
      status text not null
        check (status in ('pending', 'active', 'completed', 'failed', 'cancelled')),
      cause_attempt_id uuid constraint runs_cause_attempt_key unique,
      owner_id text,
      owner_generation integer not null default 0,
      lease_expires_at timestamptz,
      created_at timestamptz not null default now(),
      settled_at timestamptz,
      foreign key (namespace_id, session_id) references sessions (namespace_id, id),
      constraint runs_cause_matches_trigger
        check ((trigger_type = 'async_subagent_result') = (cause_attempt_id is not null))
    );
    create index runs_session_idx on runs (namespace_id, session_id);

    alter table attempts add column parent_run_id uuid references runs (id);
    create index attempts_parent_run_idx on attempts (parent_run_id) where parent_run_id is not null;
    alter table runs add constraint runs_cause_attempt_fkey
      foreign key (cause_attempt_id) references attempts (id);

    create table continuations (
      attempt_id uuid primary key references attempts (id),
      namespace_id text not null,
      session_id text not null,
      parent_run_id uuid not null references runs (id),
      state text not null check (state in ('held', 'pending', 'claimed', 'delivered', 'suppressed')),
      consumer_run_id uuid references runs (id) deferrable initially deferred,
      claim_generation integer,
      claim_deadline timestamptz,
      suppression_reason text check (suppression_reason in (
        'parent_cancelled', 'session_deleted', 'shutdown', 'consumer_failed', 'consumer_cancelled')),
      suppression_run_id uuid references runs (id),
      input text not null,
      input_digest text not null,
      receipt text not null,
      admitted_at timestamptz not null default now(),
      delivered_at timestamptz,
      constraint continuations_suppression_has_reason
        check (state <> 'suppressed' or suppression_reason is not null)
    );
    create index continuations_pending_idx on continuations (namespace_id, session_id, admitted_at)
      where state = 'pending';
    create index continuations_open_idx on continuations (consumer_run_id)
      where state in ('held', 'claimed');
    create index continuations_session_idx on continuations (namespace_id, session_id);

    -- A JSON string (or null) exactly as ECMAScript's JSON.stringify writes it: RFC 8785 strings.
    create function baton_json(value text) returns text language sql immutable as $f$
      select coalesce(to_json(value)::text, 'null')
    $f$;

    -- The typed cause of a continuation, as RFC 8785 canonical JSON (members in key order).
    create function baton_continuation_cause(a attempts) returns text language sql stable as $f$
      select '{"agentId":' || baton_json(a.agent_id::text)
          || ',"attemptId":' || baton_json(a.id::text)
          || ',"parentRunId":' || baton_json(a.parent_run_id::text)
          || ',"resultBytes":' || a.output_bytes::text
          || ',"resultDigest":' || baton_json(a.output_digest)
          || ',"sessionId":' || baton_json(a.session_id)
          || ',"traceId":' || baton_json(a.metadata->>'traceId')
          || '}'
    $f$;

    -- The exact canonical durable input of an attempt's continuation, derived from the ledger
    -- alone: its cause and its complete result. An output kept whole inline is its content; one
    -- the ledger holds only a preview of is summarised (its size and preview), never guessed.
    create function baton_durable_input(p_attempt uuid) returns text language plpgsql stable as $f$
    declare
      a attempts;
    begin
      select * into a from attempts where id = p_attempt;
      if not found or a.status <> 'terminal' or a.parent_run_id is null then
        return null;
      end if;
      return '{"cause":' || baton_continuation_cause(a)
        || ',"result":{"content":'
        || case when a.output_truncated
             then '{"bytes":' || a.output_bytes::text || ',"kind":"unavailable","preview":'
                  || baton_json(a.output_preview) || '}'
             else '{"kind":"inline","text":' || baton_json(a.output_preview) || '}'
           end
        || ',"failureCategory":' || baton_json(a.failure_category)
        || ',"stopReason":' || baton_json(a.stop_reason)
        || '}}';
    end
    $f$;

    -- baton.continuation.v1 of the contracts digest family: SHA-256 over domain, NUL, UTF-8 input.
    create function baton_continuation_digest(input text) returns text language sql immutable as $f$
      select 'baton.continuation.v1:sha256:' || encode(sha256(
        convert_to('baton.continuation.v1', 'UTF8') || decode('00', 'hex') || convert_to(input, 'UTF8')
      ), 'hex')
    $f$;

    -- What a result that no run holds any more becomes: suppressed with its reason, or a pending
    -- continuation run. Shared by admission and by the reconciler (a held result whose parent
    -- ended without consuming it).
    create function baton_unheld_disposition(a attempts, session_deleted boolean, parent_status text)
      returns text language sql stable as $f$
      select case
        when session_deleted then 'session_deleted'
        when parent_status = 'cancelled' then 'parent_cancelled'
        when a.failure_category = 'shutdown' then 'shutdown'
        else 'pending'
      end
    $f$;

    -- Admission. Input: a terminal attempt with a parent run. Output: its receipt (null when there
    -- is nothing to admit). Takes share locks on the session (against its deletion fence) and the
    -- parent run (against its settlement), so a decision never races either; the continuations
    -- primary key decides between concurrent admissions of one attempt, and the loser answers the
    -- winner's receipt. Retry safety: any repeat answers the stored receipt, byte for byte.
    create function baton_admit_continuation(p_attempt uuid) returns text language plpgsql as $f$
    declare
      a attempts;
      parent runs;
      deleted boolean;
      v_receipt text;
      v_input text;
      v_disposition text;
      v_consumer uuid;
    begin
      select receipt into v_receipt from continuations where attempt_id = p_attempt;
      if found then return v_receipt; end if;
      select * into a from attempts where id = p_attempt;
      if not found or a.status <> 'terminal' or a.parent_run_id is null then return null; end if;
      select s.deleted_at is not null into deleted from sessions s
        where s.namespace_id = a.namespace_id and s.id = a.session_id for share;
      select * into parent from runs where id = a.parent_run_id for share;
      v_input := baton_durable_input(p_attempt);
      v_receipt := '{"attemptId":' || baton_json(a.id::text)
        || ',"cause":' || baton_continuation_cause(a)
        || ',"inputBytes":' || octet_length(convert_to(v_input, 'UTF8'))::text
        || ',"inputDigest":' || baton_json(baton_continuation_digest(v_input))
        || '}';
      if not deleted and parent.status in ('pending', 'active') then
        v_disposition := 'held';
        v_consumer := parent.id;
      else
        v_disposition := baton_unheld_disposition(a, deleted, parent.status);
        if v_disposition = 'pending' then v_consumer := gen_random_uuid(); end if;
      end if;
      insert into continuations (attempt_id, namespace_id, session_id, parent_run_id, state,
                                 consumer_run_id, suppression_reason, input, input_digest, receipt)
      values (a.id, a.namespace_id, a.session_id, a.parent_run_id,
              case when v_disposition in ('held', 'pending') then v_disposition else 'suppressed' end,
              v_consumer,
              case when v_disposition in ('held', 'pending') then null else v_disposition end,
              v_input, baton_continuation_digest(v_input), v_receipt)
      on conflict (attempt_id) do nothing;
      if not found then
        select receipt into v_receipt from continuations where attempt_id = p_attempt;
        return v_receipt;
      end if;
      if v_disposition = 'pending' then
        insert into runs (id, namespace_id, session_id, trigger_type, status, cause_attempt_id)
        values (v_consumer, a.namespace_id, a.session_id, 'async_subagent_result', 'pending', a.id);
      end if;
      return v_receipt;
    end
    $f$;

    create function baton_attempt_terminal_admit() returns trigger language plpgsql as $f$
    begin
      perform baton_admit_continuation(new.id);
      return null;
    end
    $f$;

    create trigger attempts_admit_continuation
      after update of status on attempts
      for each row
      when (new.status = 'terminal' and old.status <> 'terminal' and new.parent_run_id is not null)
      execute function baton_attempt_terminal_admit();

    -- The reconciler's action on one delivery. Locks the row (skipping one another reconciler
    -- holds: it answers 'busy'), then:
    -- held    → retained while its run is pending or active; when the run ended: failed →
    --           suppressed (consumer_failed), cancelled → suppressed (parent_cancelled), completed
    --           without consuming it → the same disposition as a late result (admitted/suppressed);
    -- pending → suppressed (session_deleted) behind a deletion fence, its run cancelled;
    -- claimed → acknowledged (delivered) when its consumer completed; released with a suppression
    --           naming the consumer when it failed or was cancelled; retained while the claim
    --           deadline is ahead or the consumer is active under a live lease of the claim's
    --           generation; otherwise released (lease lost): pending again, its run pending again.
    -- Retry safety: every action moves the row out of the state it applies to.
    create function baton_reconcile_delivery(p_attempt uuid) returns text language plpgsql as $f$
    declare
      c continuations;
      consumer runs;
      a attempts;
      deleted boolean;
      v_disposition text;
      v_run uuid;
    begin
      select * into c from continuations where attempt_id = p_attempt for update skip locked;
      if not found then
        return case when exists (select 1 from continuations where attempt_id = p_attempt)
          then 'busy' else 'missing' end;
      end if;
      select * into consumer from runs where id = c.consumer_run_id;
      select s.deleted_at is not null into deleted from sessions s
        where s.namespace_id = c.namespace_id and s.id = c.session_id;
      if c.state = 'pending' then
        if not deleted then return 'retained'; end if;
        update continuations set state = 'suppressed', suppression_reason = 'session_deleted',
               suppression_run_id = c.consumer_run_id
        where attempt_id = c.attempt_id;
        update runs set status = 'cancelled', settled_at = now()
        where id = c.consumer_run_id and status = 'pending';
        return 'suppressed';
      elsif c.state = 'held' then
        if consumer.status in ('pending', 'active') then return 'retained'; end if;
        if consumer.status in ('failed', 'cancelled') then
          update continuations
          set state = 'suppressed', suppression_run_id = consumer.id,
              suppression_reason = case consumer.status when 'failed' then 'consumer_failed'
                                                        else 'parent_cancelled' end
          where attempt_id = c.attempt_id;
          return 'suppressed';
        end if;
        select * into a from attempts where id = c.attempt_id;
        v_disposition := baton_unheld_disposition(a, deleted, consumer.status);
        if v_disposition <> 'pending' then
          update continuations set state = 'suppressed', suppression_reason = v_disposition
          where attempt_id = c.attempt_id;
          return 'suppressed';
        end if;
        v_run := gen_random_uuid();
        insert into runs (id, namespace_id, session_id, trigger_type, status, cause_attempt_id)
        values (v_run, c.namespace_id, c.session_id, 'async_subagent_result', 'pending', c.attempt_id);
        update continuations set state = 'pending', consumer_run_id = v_run
        where attempt_id = c.attempt_id;
        return 'admitted';
      elsif c.state = 'claimed' then
        if consumer.status = 'completed' then
          update continuations set state = 'delivered', delivered_at = now(), claim_deadline = null
          where attempt_id = c.attempt_id;
          return 'acknowledged';
        elsif consumer.status in ('failed', 'cancelled') then
          update continuations
          set state = 'suppressed', suppression_run_id = consumer.id, claim_deadline = null,
              suppression_reason = case consumer.status when 'failed' then 'consumer_failed'
                                                        else 'consumer_cancelled' end
          where attempt_id = c.attempt_id;
          return 'suppressed';
        elsif c.claim_deadline is null or c.claim_deadline > now()
              or (consumer.status = 'active' and consumer.lease_expires_at > now()
                  and consumer.owner_generation = c.claim_generation) then
          return 'retained';
        end if;
        update runs set status = 'pending', owner_id = null, lease_expires_at = null
        where id = consumer.id and status = 'active';
        update continuations set state = 'pending', claim_deadline = null, claim_generation = null
        where attempt_id = c.attempt_id;
        return 'released';
      end if;
      return 'settled';
    end
    $f$;
  `.execute(db)
}
