import { sql } from 'kysely'
import type { Db } from '../db.ts'
import { historyLength } from './agent-history.ts'

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
  /** Events in the agent's durable history: 0 for a new agent, more for a continuation. */
  readonly historyLength: number
  /**
   * Steering messages were recorded before the claim (all undelivered: nobody ran it yet). When
   * false, a message can only come later, and its bell rings after the claim committed.
   */
  readonly steeringPending: boolean
  /** Milliseconds from accept to this claim on the database clock (for the queued-time metric). */
  readonly queuedMs: number
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

interface ClaimRow {
  id: string
  agent_id: string
  session_id: string
  name: string
  prompt: unknown
  metadata: unknown
  owner_generation: number
  steering_pending: boolean
  context_length: number
  queued_ms: number
}

/** What a claim answers of each attempt it took (`context_length` is added by the caller). */
const CLAIM_COLUMNS = sql`
  a.id, a.agent_id, a.session_id, a.name, a.prompt, a.metadata, a.owner_generation,
  a.steer_sequence > 0 as steering_pending,
  (extract(epoch from now() - a.created_at) * 1000)::float8 as queued_ms
`

/**
 * Fenced claim of many attempts by one owner, in one statement.
 * Inputs: owner id, lease TTL, attempt ids (the same id twice is allowed: it is claimed once).
 * Moves each `accepted` attempt to `running`, bumps `owner_generation` (the fence), sets
 * `lease_expires_at = now() + ttl` on the database clock and appends the audit row. Claimers racing
 * for one attempt serialise on its row lock and exactly one wins; every loser is classified by a
 * second statement on a fresh snapshot.
 * Outcomes per id: claimed | terminal | held | orphaned | missing. A claimed attempt says whether
 * steering waits for it, from `steer_sequence` of the row it locked: a steer serialises on that
 * lock too, so a message is either counted here or recorded after this claim committed.
 * Retry safety: a claim retried after a lost answer sees `held` (its own live lease) and does not
 * run the child twice, unless the caller names it in `adopt`: an attempt whose claim by this very
 * owner it sent and never heard back from, and that it does not run (the caller knows both, the
 * ledger cannot). An adopted attempt still running under this owner with a live lease answers
 * `claimed` with the generation that claim took, its lease renewed and no second audit row; so a
 * group whose answer was lost after it committed still runs every attempt exactly once.
 */
export async function claimAttempts(
  db: Db,
  input: {
    readonly ownerId: string
    readonly leaseTtlMs: number
    readonly attemptIds: readonly string[]
    /** Attempts this owner's earlier claim may have taken without its answer arriving. */
    readonly adopt?: readonly string[]
  },
): Promise<ClaimAttemptOutcome[]> {
  if (input.attemptIds.length === 0) return []
  // A lease that would already be expired when the database grants it is no lease at all.
  if (!Number.isSafeInteger(input.leaseTtlMs) || input.leaseTtlMs <= 0) {
    throw new RangeError(`leaseTtlMs must be a positive integer, got ${input.leaseTtlMs}`)
  }
  // A lone claim (every claim, at rest) matches `id = $1` and keeps one generic plan. Joined to a
  // one-element array, its plan for the actual array always looked cheaper than the generic one,
  // and Postgres planned it afresh on every run, which cost more than running it. Its status
  // is a parameter so that no generic plan can use `attempts_accepted_idx`: a scan of every queued
  // attempt, which looks cheapest while the statistics count few of them and costs the backlog
  // per claim once they are many. A batch is planned for its own array, as before.
  const [only] = input.attemptIds
  const target =
    input.attemptIds.length === 1
      ? sql`where a.id = ${only} and a.status = ${'accepted'}`
      : sql`from unnest(${input.attemptIds}::uuid[]) as i(id) where a.id = i.id and a.status = 'accepted'`
  const claimed = await sql<ClaimRow>`
    with c as (
      update attempts a
      set status = 'running',
          owner_id = ${input.ownerId},
          owner_generation = a.owner_generation + 1,
          lease_expires_at = now() + ${input.leaseTtlMs} * interval '1 millisecond',
          heartbeat_at = now(),
          started_at = now()
      ${target}
      returning ${CLAIM_COLUMNS}
    ), t as (
      insert into attempt_transitions (attempt_id, session_id, from_status, to_status, event, owner_id,
                                       owner_generation)
      select id, session_id, 'accepted', 'running', 'claimed', ${input.ownerId}, owner_generation
      from c
    )
    select c.*, ${historyLength(sql.ref('c.agent_id'))} as context_length from c
  `.execute(db)
  const won = new Map(claimed.rows.map((r) => [r.id, r]))
  const adoptable = new Set(input.adopt ?? [])
  const adopt = input.attemptIds.filter((id) => adoptable.has(id) && !won.has(id))
  if (adopt.length > 0) {
    const adopted = await sql<ClaimRow>`
      with c as (
        update attempts a
        set lease_expires_at = now() + ${input.leaseTtlMs} * interval '1 millisecond',
            heartbeat_at = now()
        where a.id = any(${adopt}::uuid[]) and a.status = 'running'
          and a.owner_id = ${input.ownerId} and a.lease_expires_at > now()
        returning ${CLAIM_COLUMNS}
      )
      select c.*, ${historyLength(sql.ref('c.agent_id'))} as context_length from c
    `.execute(db)
    for (const row of adopted.rows) won.set(row.id, row)
  }
  const lost = input.attemptIds.filter((id) => !won.has(id))
  const states = new Map<
    string,
    { status: string; live: boolean | null; owner_generation: number }
  >()
  if (lost.length > 0) {
    const current = await sql<{
      id: string
      status: string
      live: boolean | null
      owner_generation: number
    }>`
      select id, status, lease_expires_at > now() as live, owner_generation
      from attempts where id = any(${lost}::uuid[])
    `.execute(db)
    for (const row of current.rows) states.set(row.id, row)
  }
  const handedOut = new Set<string>()
  return input.attemptIds.map((id): ClaimAttemptOutcome => {
    const row = won.get(id)
    if (row !== undefined && !handedOut.has(id)) {
      handedOut.add(id)
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
          historyLength: row.context_length,
          steeringPending: row.steering_pending,
          queuedMs: row.queued_ms,
        },
      }
    }
    if (row !== undefined) return { kind: 'held' } // the same id twice in one batch
    const state = states.get(id)
    if (state === undefined) return { kind: 'missing' }
    if (state.status === 'terminal') return { kind: 'terminal' }
    if (state.live === true) return { kind: 'held' }
    return { kind: 'orphaned', ownerGeneration: state.owner_generation }
  })
}

/** Fenced claim of one attempt: `claimAttempts` with a single id. */
export async function claimAttempt(db: Db, input: ClaimAttemptInput): Promise<ClaimAttemptOutcome> {
  const [outcome] = await claimAttempts(db, {
    ownerId: input.ownerId,
    leaseTtlMs: input.leaseTtlMs,
    attemptIds: [input.attemptId],
  })
  if (outcome === undefined) throw new Error('claimAttempts returned no outcome')
  return outcome
}
