import { sql, type Kysely } from 'kysely'

/**
 * Hosted parents: sessions with a profile, whose parent runs Baton's fleet executes.
 *
 * - `sessions.profile` (null: a host-managed session, as before), `metadata`, and
 *   `parent_agent_id`: the session's parent agent. Every hosted run of the session is an attempt
 *   of that agent whose id is the run's id, so the fleet runs it under the attempts' lease, fence,
 *   heartbeat, cancel and commit rules, the agent's history is the session's conversation, and the
 *   index that allows one non-terminal attempt per agent allows one active run per session.
 * - `runs.hosted` (set on insert from the session), `runs.input` (a user run's input) and
 *   `runs.admission_seq`: hosted runs start one at a time in this order.
 * - `baton_hosted_run_follows_attempt`: a hosted run follows its attempt. Running → the run is
 *   `active` under the attempt's owner and generation, and the continuation it consumes `claimed`
 *   with that generation (no deadline: the attempt's lease keeps it). Terminal → the run ends
 *   (`completed`, `cancelled` for a cancelled abort, `failed` otherwise: process loss included),
 *   and the deliveries it held or claimed are reconciled in the same transaction, as `endRun`
 *   does for a host run. Retry safety: each update applies only from the state it leaves.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    alter table sessions add column profile text, add column metadata jsonb,
      add column parent_agent_id uuid;
    alter table runs add column hosted boolean not null default false,
      add column input jsonb,
      add column admission_seq bigint generated always as identity;
    create index runs_hosted_pending_idx on runs (namespace_id, session_id, admission_seq)
      where hosted and status = 'pending';

    create function baton_hosted_run_of_session() returns trigger language plpgsql as $f$
    begin
      select s.profile is not null into new.hosted from sessions s
      where s.namespace_id = new.namespace_id and s.id = new.session_id;
      new.hosted := coalesce(new.hosted, false);
      return new;
    end
    $f$;
    create trigger runs_hosted before insert on runs
      for each row execute function baton_hosted_run_of_session();

    create function baton_hosted_run_follows_attempt() returns trigger language plpgsql as $f$
    declare
      v_status text;
    begin
      if new.status = 'running' then
        update runs set status = 'active', owner_id = new.owner_id,
               owner_generation = new.owner_generation, lease_expires_at = null
        where id = new.id and hosted and status in ('pending', 'active');
        if found then
          update continuations set state = 'claimed', claim_generation = new.owner_generation,
                 claim_deadline = null
          where consumer_run_id = new.id and state in ('pending', 'claimed');
        end if;
      elsif new.status = 'terminal' then
        v_status := case
          when new.stop_reason = 'completed' then 'completed'
          when new.stop_reason = 'aborted' and new.failure_category = 'cancelled' then 'cancelled'
          else 'failed' end;
        update runs set status = v_status, settled_at = now(), lease_expires_at = null
        where id = new.id and hosted and status in ('pending', 'active');
        if found then
          perform baton_reconcile_delivery(c.attempt_id, null) from continuations c
          where c.consumer_run_id = new.id and c.state in ('held', 'claimed', 'pending');
        end if;
      end if;
      return null;
    end
    $f$;
    -- Only a parent agent's attempts are runs (\`profile:\` names no delegation can take): other
    -- attempts pay no statement for this trigger.
    create trigger attempts_hosted_run after update of status on attempts
      for each row when (old.status is distinct from new.status and new.name like 'profile:%')
      execute function baton_hosted_run_follows_attempt();
  `.execute(db)
}
