import { sql } from 'kysely'
import type { Db } from '../db.ts'

export interface ClaimAttemptInput {
  readonly attemptId: string
  readonly ownerId: string
  readonly leaseTtlMs: number
}

export interface ClaimedAttempt {
  readonly attemptId: string
  readonly agentId: string
  readonly sessionId: string
  readonly name: string
  readonly prompt: unknown
  readonly metadata: unknown
  readonly ownerGeneration: number
}

export type ClaimAttemptOutcome =
  | { readonly kind: 'claimed'; readonly attempt: ClaimedAttempt }
  /** Already terminal: acknowledge the job without running it. */
  | { readonly kind: 'terminal' }
  /** Running under a live lease (this or another owner): acknowledge without running. */
  | { readonly kind: 'held' }
  /**
   * Running under an expired lease: execution had started and its owner vanished. It must not run
   * again (children have side effects); the caller records the process-loss terminal outcome.
   */
  | { readonly kind: 'orphaned'; readonly ownerGeneration: number }
  | { readonly kind: 'missing' }

/**
 * Fenced claim. Inputs: attempt id, the claiming owner id, the lease TTL.
 * One statement moves `accepted → running`, bumps `owner_generation` (the fence), sets
 * `lease_expires_at = now() + ttl` on the database clock and appends the audit row.
 * Only an `accepted` attempt can be claimed, so two claimers racing for one attempt serialise on
 * its row lock and exactly one wins; the loser re-reads the row to learn why.
 * Outcomes: claimed | terminal | held | orphaned | missing. Retry safety: a retried claim after a
 * lost response sees `held` (its own live lease) and does not run the child.
 */
export async function claimAttempt(db: Db, input: ClaimAttemptInput): Promise<ClaimAttemptOutcome> {
  const claimed = await sql<{
    id: string
    agent_id: string
    session_id: string
    name: string
    prompt: unknown
    metadata: unknown
    owner_generation: number
  }>`
    with c as (
      update attempts
      set status = 'running',
          owner_id = ${input.ownerId},
          owner_generation = owner_generation + 1,
          lease_expires_at = now() + ${input.leaseTtlMs} * interval '1 millisecond',
          started_at = now()
      where id = ${input.attemptId} and status = 'accepted'
      returning id, agent_id, session_id, name, prompt, metadata, owner_generation
    ), t as (
      insert into attempt_transitions (attempt_id, from_status, to_status, event, owner_id, owner_generation)
      select id, 'accepted', 'running', 'claimed', ${input.ownerId}, owner_generation from c
    )
    select * from c
  `.execute(db)
  const row = claimed.rows[0]
  if (row !== undefined) {
    return {
      kind: 'claimed',
      attempt: {
        attemptId: row.id,
        agentId: row.agent_id,
        sessionId: row.session_id,
        name: row.name,
        prompt: row.prompt,
        metadata: row.metadata,
        ownerGeneration: row.owner_generation,
      },
    }
  }
  // Not claimable. A fresh statement (fresh snapshot) tells why.
  const current = await sql<{ status: string; live: boolean | null; owner_generation: number }>`
    select status, lease_expires_at > now() as live, owner_generation
    from attempts where id = ${input.attemptId}
  `.execute(db)
  const state = current.rows[0]
  if (state === undefined) return { kind: 'missing' }
  if (state.status === 'terminal') return { kind: 'terminal' }
  if (state.live === true) return { kind: 'held' }
  return { kind: 'orphaned', ownerGeneration: state.owner_generation }
}
