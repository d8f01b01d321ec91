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
 * renewal of every other lease of the worker.
 * Outcomes per attempt: `renewed` (with any pending cancel request) | `lost` (expired, fenced by a
 * newer generation, terminal, or missing) | `skipped` (locked, and still owned and live as the
 * statement began: neither renewed nor lost this round). Retry safety: renewing twice only
 * extends the lease.
 *
 * Its cost follows the leases it holds, whatever plan a connection keeps: each held lease is read
 * through the primary key, and the renewed rows are answered as they are, never matched back to
 * the held ones inside the statement (a generic plan, which cannot know the array's length, would
 * match them with a loop over every pair).
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
  const ids = leases.map((l) => l.attemptId)
  const generations = leases.map((l) => l.ownerGeneration)
  const result = await sql<{
    id: string
    renewed: boolean
    live: boolean
    cancel_requested: boolean
    steering_pending: boolean
  }>`
    with held as (
      select * from unnest(${ids}::uuid[], ${generations}::int[]) as held(id, generation)
    ), owned as (
      select a.id from attempts a join held on a.id = held.id
      where a.owner_generation = held.generation
        and a.owner_id = ${input.ownerId}
        and a.status = 'running'
        and a.lease_expires_at > now()
      for update of a skip locked
    ), renewed as (
      update attempts a
      set lease_expires_at = now() + ${input.leaseTtlMs} * interval '1 millisecond',
          heartbeat_at = now()
      from owned where a.id = owned.id
      returning a.id, a.cancel_requested_at is not null as cancel_requested,
        exists (select 1 from attempt_messages m where m.attempt_id = a.id and m.delivered_at is null)
          as steering_pending
    )
    select r.id, true as renewed, true as live, r.cancel_requested, r.steering_pending
    from renewed r
    union all
    select held.id, false, coalesce(a.owner_generation = held.generation
             and a.owner_id = ${input.ownerId} and a.status = 'running'
             and a.lease_expires_at > now(), false), false, false
    from held left join attempts a on a.id = held.id
  `.execute(db)
  // A renewed lease answers twice: renewed, and as held (read before the renewal); renewed wins.
  const answered = new Map<string, (typeof result.rows)[number]>()
  for (const row of result.rows) if (!answered.get(row.id)?.renewed) answered.set(row.id, row)
  return input.leases.map((l) => {
    const row = isWellFormedLease(l) ? answered.get(l.attemptId) : undefined
    if (row === undefined || (!row.renewed && !row.live)) return lost(l)
    return {
      attemptId: l.attemptId,
      status: row.renewed ? 'renewed' : 'skipped',
      cancelRequested: row.cancel_requested,
      steeringPending: row.steering_pending,
    }
  })
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
