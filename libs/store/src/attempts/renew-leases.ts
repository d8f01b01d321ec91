import { sql } from 'kysely'
import type { Db } from '../db.ts'

export interface HeldLease {
  readonly attemptId: string
  readonly ownerGeneration: number
}

export interface LeaseRenewal {
  readonly attemptId: string
  readonly status: 'renewed' | 'lost'
  /** A cancel request recorded in the ledger (the fallback when a queue event was missed). */
  readonly cancelRequested: boolean
  /** Undelivered steering messages wait in the ledger (the fallback for a missed steer event). */
  readonly steeringPending: boolean
}

/**
 * Batched heartbeat: ONE statement renews every lease a worker holds.
 * Inputs: owner id, the (attempt id, owner generation) pairs it believes it holds, the lease TTL.
 * A lease is renewed only while the row is `running`, owned by this owner at this generation, and
 * not yet expired on the database clock: an expired owner cannot revive itself.
 * Outcomes per attempt: `renewed` (with any pending cancel request) | `lost` (expired, fenced by a
 * newer generation, terminal, or missing). Retry safety: renewing twice only extends the lease.
 */
export async function renewLeases(
  db: Db,
  input: {
    readonly ownerId: string
    readonly leases: readonly HeldLease[]
    readonly leaseTtlMs: number
  },
): Promise<LeaseRenewal[]> {
  if (input.leases.length === 0) return []
  const ids = input.leases.map((l) => l.attemptId)
  const generations = input.leases.map((l) => l.ownerGeneration)
  const result = await sql<{ id: string; cancel_requested: boolean; steering_pending: boolean }>`
    update attempts a
    set lease_expires_at = now() + ${input.leaseTtlMs} * interval '1 millisecond'
    from unnest(${ids}::uuid[], ${generations}::int[]) as held(id, generation)
    where a.id = held.id
      and a.owner_generation = held.generation
      and a.owner_id = ${input.ownerId}
      and a.status = 'running'
      and a.lease_expires_at > now()
    returning a.id, a.cancel_requested_at is not null as cancel_requested,
      exists (select 1 from attempt_messages m where m.attempt_id = a.id and m.delivered_at is null)
        as steering_pending
  `.execute(db)
  const renewed = new Map(result.rows.map((r) => [r.id, r]))
  return input.leases.map((l) => {
    const row = renewed.get(l.attemptId)
    return row === undefined
      ? { attemptId: l.attemptId, status: 'lost', cancelRequested: false, steeringPending: false }
      : {
          attemptId: l.attemptId,
          status: 'renewed',
          cancelRequested: row.cancel_requested,
          steeringPending: row.steering_pending,
        }
  })
}
