import { sql } from 'kysely'
import type { Db } from '../db.ts'

export interface HeldLease {
  readonly attemptId: string
  readonly ownerGeneration: number
}

export interface LeaseRenewal {
  readonly attemptId: string
  /**
   * `skipped`: still owned and live, but its row was locked by another transaction (a commit
   * waiting on its namespace's quota, say), so this round neither renewed nor lost it.
   */
  readonly status: 'renewed' | 'lost' | 'skipped'
  /** A cancel request recorded in the ledger (the fallback when a queue event was missed). */
  readonly cancelRequested: boolean
  /** Undelivered steering messages wait in the ledger (the fallback for a missed steer event). */
  readonly steeringPending: boolean
}

/**
 * Batched heartbeat: ONE statement renews every lease a worker holds.
 * Inputs: owner id, the (attempt id, owner generation) pairs it believes it holds, the lease TTL.
 * A lease is renewed only while the row is `running`, owned by this owner at this generation, and
 * not yet expired on the database clock: an expired owner cannot revive itself. Rows another
 * transaction has locked are skipped, not waited for: one locked attempt must not hold up the
 * renewal of every other lease of the worker. The lock taken is the one an update of non-key
 * columns needs (`for no key update`), so a row only referenced meanwhile (a steering message or
 * a transition inserted for it, which lock its key) is renewed, not skipped.
 * Outcomes per attempt: `renewed` (with any pending cancel request) | `lost` (expired, fenced by a
 * newer generation, terminal, or missing) | `skipped` (locked, and still owned and live when
 * read after the renewal: neither renewed nor lost this round). Retry safety: renewing twice only
 * extends the lease.
 *
 * Its cost follows the leases it holds, whatever plan a connection keeps and however stale the
 * table's statistics: each held lease is read through the primary key by a lateral subquery that
 * locks its row (a subquery that locks is never merged into the join, so the planner cannot turn
 * it around), and the renewed rows are answered as they are, never matched back to the held ones
 * inside the statement. The subquery leaves `status = 'running'` to its caller (`offset 0` keeps
 * the planner from pushing it back in): that condition matches the running attempts' index,
 * whose estimate is what goes stale. With a plain join and the status inside, statistics taken
 * before the children started (autovacuum lags behind a ramp) made the planner read the running
 * attempts and compare each with every held lease: a worker holding 5,000 children spent seconds
 * per renewal, holding the row locks a cancel's commit waits for. The owner, generation and live
 * lease the subquery does check are only ever true of a running attempt (a terminal one has no
 * lease, a released one no owner), so it never locks a row it does not then renew. Only the leases it did not renew (none, as a rule) are
 * read again, by a second statement, to tell `skipped` from `lost`.
 *
 * No item can poison the statement: a worker holds only leases its claim statement answered, so
 * every id is a uuid Postgres printed and every generation an `int` it returned. Should a lease
 * that cannot name a held attempt reach it anyway (not a canonical uuid, a generation outside
 * `int`), it is answered `lost` on its own and kept out of the statement, which would otherwise
 * fail every renewal of the worker with it.
 */
export async function renewLeases(
  db: Db,
  input: {
    readonly ownerId: string
    readonly leases: readonly HeldLease[]
    readonly leaseTtlMs: number
  },
): Promise<LeaseRenewal[]> {
  const leases = input.leases.filter(isWellFormedLease)
  if (leases.length === 0) return input.leases.map(lost)
  const renewed = await sql<{ id: string; cancel_requested: boolean; steering_pending: boolean }>`
    with held as (
      select * from unnest(${leases.map((l) => l.attemptId)}::uuid[],
                           ${leases.map((l) => l.ownerGeneration)}::int[]) as held(id, generation)
    ), owned as (
      select o.id from held cross join lateral (
        select a.id, a.status from attempts a
        where a.id = held.id
          and a.owner_generation = held.generation
          and a.owner_id = ${input.ownerId}
          and a.lease_expires_at > now()
        offset 0
        for no key update of a skip locked
      ) o
      where o.status = 'running'
    )
    update attempts a
    set lease_expires_at = now() + ${input.leaseTtlMs} * interval '1 millisecond',
        heartbeat_at = now()
    from owned where a.id = owned.id
    returning a.id, a.cancel_requested_at is not null as cancel_requested,
      exists (select 1 from attempt_messages m where m.attempt_id = a.id and m.delivered_at is null)
        as steering_pending
  `.execute(db)
  const answered = new Map(renewed.rows.map((row) => [row.id, row]))
  const unrenewed = leases.filter((l) => !answered.has(l.attemptId))
  const live = unrenewed.length === 0 ? new Set<string>() : await liveLeases(db, input, unrenewed)
  return input.leases.map((l) => {
    const row = isWellFormedLease(l) ? answered.get(l.attemptId) : undefined
    if (row !== undefined) {
      return {
        attemptId: l.attemptId,
        status: 'renewed',
        cancelRequested: row.cancel_requested,
        steeringPending: row.steering_pending,
      }
    }
    return live.has(l.attemptId) ? skipped(l) : lost(l)
  })
}

/**
 * Of leases a renewal did not renew, those still owned and live on the database clock: their
 * rows were locked by another transaction (a lock is not waited for: this reads the last
 * committed version). Read through the primary key.
 */
async function liveLeases(
  db: Db,
  owner: { readonly ownerId: string },
  leases: readonly HeldLease[],
): Promise<Set<string>> {
  // Liveness is answered per lease rather than filtered on, so the plan cannot read the running
  // attempts' index (every child of every worker) in place of each lease's primary key.
  const { rows } = await sql<{ id: string; live: boolean }>`
    select unrenewed.id,
           coalesce(a.owner_generation = unrenewed.generation and a.owner_id = ${owner.ownerId}
                    and a.status = 'running' and a.lease_expires_at > now(), false) as live
    from unnest(${leases.map((l) => l.attemptId)}::uuid[],
                ${leases.map((l) => l.ownerGeneration)}::int[]) as unrenewed(id, generation)
    left join attempts a on a.id = unrenewed.id
  `.execute(db)
  return new Set(rows.flatMap((r) => (r.live ? [r.id] : [])))
}

function skipped(lease: HeldLease): LeaseRenewal {
  return {
    attemptId: lease.attemptId,
    status: 'skipped',
    cancelRequested: false,
    steeringPending: false,
  }
}

function lost(lease: HeldLease): LeaseRenewal {
  return {
    attemptId: lease.attemptId,
    status: 'lost',
    cancelRequested: false,
    steeringPending: false,
  }
}

/** How Postgres prints a uuid: the only form a claimed attempt's id can have. */
const CANONICAL_UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/
const INT_MAX = 2_147_483_647

function isWellFormedLease(lease: HeldLease): boolean {
  return (
    CANONICAL_UUID.test(lease.attemptId) &&
    Number.isInteger(lease.ownerGeneration) &&
    lease.ownerGeneration >= 0 &&
    lease.ownerGeneration <= INT_MAX
  )
}
