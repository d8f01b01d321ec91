import { sql, type Kysely } from 'kysely'

/**
 * Lease renewals are heap-only updates.
 *
 * A renewal writes `lease_expires_at` and `heartbeat_at` of every running attempt a worker holds,
 * once per heartbeat. While `lease_expires_at` was a key of `attempts_running_lease_idx`, each of
 * those writes was a full new row version with a new entry in every index of `attempts`: a worker
 * holding thousands of children wrote thousands of index entries per heartbeat, and until
 * autovacuum caught up (on a busy server it may not for minutes) every renewal, claim and sweep
 * walked the dead versions, so the cost of keeping one child alive grew with the number of
 * children and with time. Without an index on the columns a renewal writes, Postgres updates the
 * row in place on its page (HOT) and prunes the old version as it goes, without vacuum.
 *
 * - `attempts_running_idx`: the running attempts, keyed by namespace (which never changes). The
 *   reconciler's sweep of expired leases and the dashboard read the running attempts through it
 *   and sort them by lease: their cost follows the children running, never the history.
 * - `fillfactor = 50`: room on each page for a new version of every row on it: a renewal updates
 *   all the running attempts of a page at once (running attempts are the newest rows, side by
 *   side), and a version that does not fit on its page is not heap-only.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    drop index attempts_running_lease_idx;
    create index attempts_running_idx on attempts (namespace_id) where status = 'running';
    alter table attempts set (fillfactor = 50);
  `.execute(db)
}
