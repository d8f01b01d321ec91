import { sql, type Kysely } from 'kysely'

/**
 * Host runs carry a lease, and a continuation nobody claims ends.
 *
 * - A run a host creates (`user`, `explicit`) now has `lease_expires_at` on the database clock,
 *   renewed by the host's heartbeat, like a claimed continuation run's (one lease mechanism; a
 *   host run has no owner, a claimed run has its claim's). Runs active when this migration runs get
 *   the default lease from now. A host run whose lease expired ends `abandoned` (the reconciler,
 *   or the host's own late end or heartbeat, records it), and what it held is released: held
 *   results become continuations, an explicit run's results are suppressed again and consumable
 *   once more.
 * - `unclaimed`: the suppression of a continuation that stayed pending past the reconciler's
 *   setting; its run is cancelled and its evidence kept, as for a deletion fence.
 *
 * `baton_reconcile_delivery` takes the `unclaimed` setting (null: never), and its answer for a
 * delivery already delivered or suppressed is `concluded`.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    alter table runs drop constraint runs_status_check;
    alter table runs add constraint runs_status_check check (status in (
      'pending', 'active', 'completed', 'failed', 'cancelled', 'abandoned'));
    alter table continuations drop constraint continuations_suppression_reason_check;
    alter table continuations add constraint continuations_suppression_reason_check
      check (suppression_reason in ('parent_cancelled', 'session_deleted', 'shutdown',
                                    'consumer_failed', 'consumer_cancelled', 'unclaimed'));

    -- The default lease of a run created without one (RUN_LEASE_MS_DEFAULT in the contracts).
    update runs set lease_expires_at = now() + interval '600000 milliseconds'
    where status = 'active' and owner_id is null and lease_expires_at is null;

    drop function baton_reconcile_delivery(uuid);

    -- The reconciler's action on one delivery. Locks the row (skipping one another reconciler
    -- holds: it answers 'busy'), then:
    -- pending → suppressed (session_deleted) behind a deletion fence, or (unclaimed) when its run
    --           was admitted longer than p_unclaimed_after ago; its run is cancelled either way;
    -- held    → retained while its run is pending or active; when the run ended: failed →
    --           suppressed (consumer_failed), cancelled → suppressed (parent_cancelled), completed
    --           without consuming it or abandoned by its host → the same disposition as a late
    --           result (admitted or suppressed);
    -- claimed → acknowledged (delivered) when its consumer completed; released with a suppression
    --           naming the consumer when it failed or was cancelled; for an explicit consumer,
    --           released (suppressed again, consumable by another explicit run) once abandoned;
    --           for a continuation run, retained while the claim deadline is ahead or the consumer
    --           is active under a live lease of the claim's generation, otherwise released (lease
    --           lost): pending again, its run pending again.
    -- Retry safety: every action moves the row out of the state it applies to.
    create function baton_reconcile_delivery(p_attempt uuid, p_unclaimed_after interval)
    returns text language plpgsql as $f$
    declare
      c continuations;
      consumer runs;
      a attempts;
      deleted boolean;
      v_reason text;
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
        v_reason := case
          when deleted then 'session_deleted'
          when p_unclaimed_after is not null and consumer.status = 'pending'
               and consumer.created_at <= now() - p_unclaimed_after then 'unclaimed'
        end;
        if v_reason is null then return 'retained'; end if;
        update continuations set state = 'suppressed', suppression_reason = v_reason,
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
        elsif consumer.trigger_type = 'explicit' then
          if consumer.status <> 'abandoned' then return 'retained'; end if;
          -- Suppressed again, as it was before the explicit run took it (reason kept).
          update continuations set state = 'suppressed', consumer_run_id = c.suppression_run_id
          where attempt_id = c.attempt_id;
          return 'released';
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
      return 'concluded';
    end
    $f$;
  `.execute(db)
}
