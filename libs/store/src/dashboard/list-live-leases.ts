import { sql } from 'kysely'
import type { Db } from '../db.ts'
import { TRANSIENT_READ_RETRY, retryTransient } from '../pg-errors.ts'

export interface LiveLease {
  readonly attemptId: string
  readonly namespaceId: string
  readonly agentId: string
  readonly name: string
  readonly sessionId: string
  readonly ownerId: string | null
  readonly ownerGeneration: number
  readonly startedAt: Date | null
  readonly leaseExpiresAt: Date | null
  /** The owner's claim or latest renewal (on the database clock). */
  readonly heartbeatAt: Date | null
  readonly cancelRequestedAt: Date | null
}

/**
 * Running attempts and their leases, across every namespace, the soonest to expire first (an
 * expired lease the reconciler has not yet settled leads), at most `limit`, through the partial
 * index on running leases. Answers the database clock with them, so ages are computed against
 * the clock that decides leases.
 */
export async function listLiveLeases(
  db: Db,
  input: { readonly limit: number },
): Promise<{ readonly now: Date; readonly leases: LiveLease[] }> {
  const result = await retryTransient(
    () =>
      sql<{
        now: Date
        id: string | null
        namespace_id: string
        agent_id: string
        name: string
        session_id: string
        owner_id: string | null
        owner_generation: number
        started_at: Date | null
        lease_expires_at: Date | null
        heartbeat_at: Date | null
        cancel_requested_at: Date | null
      }>`
        select n.now, l.*
        from (select now() as now) n
        left join lateral (
          select id, namespace_id, agent_id, name, session_id, owner_id, owner_generation,
                 started_at, lease_expires_at, heartbeat_at, cancel_requested_at
          from attempts where status = 'running'
          order by lease_expires_at limit ${input.limit}
        ) l on true
        order by l.lease_expires_at, l.id
      `.execute(db),
    TRANSIENT_READ_RETRY,
  )
  const first = result.rows[0]
  if (first === undefined) throw new Error('listLiveLeases: the clock row is missing')
  const leases: LiveLease[] = []
  for (const r of result.rows) {
    if (r.id === null) continue
    leases.push({
      attemptId: r.id,
      namespaceId: r.namespace_id,
      agentId: r.agent_id,
      name: r.name,
      sessionId: r.session_id,
      ownerId: r.owner_id,
      ownerGeneration: r.owner_generation,
      startedAt: r.started_at,
      leaseExpiresAt: r.lease_expires_at,
      heartbeatAt: r.heartbeat_at,
      cancelRequestedAt: r.cancel_requested_at,
    })
  }
  return { now: first.now, leases }
}
