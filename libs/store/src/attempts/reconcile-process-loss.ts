import { sql } from 'kysely'
import type { ClaimableDetail } from '@baton/contracts'
import type { Db } from '../db.ts'
import { SET_TERMINAL_FROM_INPUT, processLossProjection, terminalInput } from './terminal-record.ts'

/**
 * Attempts whose execution started and whose owner's lease expired on the database clock: the
 * owner is presumed dead. They are never run again; they get a synthesized terminal outcome.
 */
export async function findExpiredRunning(
  db: Db,
  input: { readonly limit: number },
): Promise<{ attemptId: string; ownerGeneration: number }[]> {
  const result = await sql<{ id: string; owner_generation: number }>`
    select id, owner_generation from attempts
    where status = 'running' and lease_expires_at <= now()
    order by lease_expires_at
    limit ${input.limit}
  `.execute(db)
  return result.rows.map((r) => ({ attemptId: r.id, ownerGeneration: r.owner_generation }))
}

/** An attempt a process-loss commit made terminal. */
export interface ProcessLoss {
  readonly attemptId: string
  /** With a parent run, the session its result goes back to (see `CommittedTerminal`). */
  readonly parentSession?: ClaimableDetail
  /** The attempt's session: for a hosted run, its next run may start now. */
  readonly session: ClaimableDetail
}

/**
 * Process-loss terminal commit, batched. Inputs: (attempt id, owner generation) pairs observed
 * expired. Applies only while each attempt is still `running` at that generation with an expired
 * lease, so a renewal that won the race, or another reconciler that got there first, makes it a
 * no-op. The projection and fingerprint (trace id included) follow the same rules as a normal commit, so a late
 * result from the old owner is refused (`stale_fence`/`refused`), never merged.
 * Outcome: the attempts this call made terminal. Retry safety: a repeat applies to nothing.
 */
export async function commitProcessLoss(
  db: Db,
  expired: readonly { readonly attemptId: string; readonly ownerGeneration: number }[],
): Promise<ProcessLoss[]> {
  if (expired.length === 0) return []
  // The fingerprint binds each attempt's trace id, as a worker's commit does.
  const traced = await sql<{ id: string; trace_id: string | null }>`
    select id, metadata->>'traceId' as trace_id from attempts
    where id = any(${expired.map((e) => e.attemptId)}::uuid[])
  `.execute(db)
  const traceIds = new Map(traced.rows.map((r) => [r.id, r.trace_id ?? undefined]))
  const rows = expired.map((e) => ({
    ...processLossProjection(e.attemptId, e.ownerGeneration, traceIds.get(e.attemptId)),
    ownerId: null,
  }))
  const result = await sql<{
    id: string
    namespace_id: string
    session_id: string
    has_parent: boolean
  }>`
    with i as (${terminalInput(rows)}),
    c as (
      update attempts a
      set ${SET_TERMINAL_FROM_INPUT}
      from i
      where a.id = i.id
        and a.owner_generation = i.generation
        and a.status = 'running'
        and a.lease_expires_at <= now()
      returning a.id, a.owner_id, a.owner_generation, a.namespace_id, a.session_id, a.parent_run_id
    ), t as (
      insert into attempt_transitions (attempt_id, session_id, from_status, to_status, event, owner_id,
                                       owner_generation)
      select id, session_id, 'running', 'terminal', 'process_lost', owner_id, owner_generation from c
    )
    select id, namespace_id, session_id, parent_run_id is not null as has_parent from c
  `.execute(db)
  return result.rows.map((r) => {
    const session = { namespaceId: r.namespace_id, sessionId: r.session_id }
    return r.has_parent
      ? { attemptId: r.id, parentSession: session, session }
      : { attemptId: r.id, session }
  })
}
