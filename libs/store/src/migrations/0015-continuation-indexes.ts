import { sql, type Kysely } from 'kysely'

/**
 * Indexes for the continuation statements that run per claim, per sweep and per scrape, so each
 * reads what it decides on and nothing of a session's or the ledger's history:
 *
 * - `continuations_pending_idx` gains `attempt_id`, the claim's tiebreak: the claim reads the
 *   session's oldest pending continuation from the index in claim order, with no sort.
 * - `continuations_session_claimed_idx`: a session's claims by deadline, for the claim's own
 *   release of its session's lease-lost claims.
 * - `continuations_claim_deadline_idx`: every claim by deadline, for the reconciler's sweep,
 *   which takes the oldest deadlines first.
 * - `continuations_unclaimed_idx`: pending continuations by admission time, for the sweep's
 *   `unclaimed` suppression.
 * - `continuations_open_state_idx`: the open states alone, so the continuations gauge counts
 *   held, pending and claimed deliveries from an index whatever the delivered history.
 * - `runs_host_lease_idx`: active host runs by lease, for the sweep's abandonment of runs whose
 *   host stopped renewing them.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    drop index continuations_pending_idx;
    create index continuations_pending_idx
      on continuations (namespace_id, session_id, admitted_at, attempt_id) where state = 'pending';
    create index continuations_session_claimed_idx
      on continuations (namespace_id, session_id, claim_deadline) where state = 'claimed';
    create index continuations_claim_deadline_idx
      on continuations (claim_deadline) where state = 'claimed';
    create index continuations_unclaimed_idx on continuations (admitted_at) where state = 'pending';
    create index continuations_open_state_idx
      on continuations (state) where state in ('held', 'pending', 'claimed');
    create index runs_host_lease_idx
      on runs (lease_expires_at) where status = 'active' and owner_id is null;
  `.execute(db)
}
