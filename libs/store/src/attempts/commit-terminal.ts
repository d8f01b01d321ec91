import { sql } from 'kysely'
import type { Db } from '../db.ts'
import {
  SET_TERMINAL_FROM_INPUT,
  buildTerminalProjection,
  terminalInput,
  type TerminalResultInput,
} from './terminal-record.ts'

export interface CommitTerminalInput {
  readonly attemptId: string
  readonly ownerId: string
  readonly ownerGeneration: number
  readonly result: TerminalResultInput
}

export type CommitTerminalOutcome =
  | 'committed'
  /** Already terminal with this exact projection: a retry after a lost response. */
  | 'replayed'
  /** Already terminal with a different projection: the outcome never changes. */
  | 'refused'
  /** This owner's lease expired on the database clock. */
  | 'lease_lost'
  /** Another owner or a newer generation holds the attempt. */
  | 'stale_fence'
  | 'missing'

/**
 * Fenced terminal commits, many per statement.
 * Inputs per attempt: id, owner id and generation (the fence), the result.
 * Each applies only while the attempt is `running`, owned by (owner, generation), and its lease
 * is live at the database's `now()`; it stores the projection and its fingerprint and appends the
 * audit row in the same statement. Commits that did not apply are classified on a fresh snapshot.
 * Outcomes: committed | replayed | refused | lease_lost | stale_fence | missing.
 * Retry safety: an exact retry (same fingerprint) after a lost response is `replayed`.
 */
export async function commitTerminals(
  db: Db,
  inputs: readonly CommitTerminalInput[],
): Promise<CommitTerminalOutcome[]> {
  if (inputs.length === 0) return []
  const rows = inputs.map((input) => ({
    input,
    ...buildTerminalProjection(input.attemptId, input.ownerGeneration, input.result),
  }))
  const applied = await sql<{ id: string }>`
    with i as (${terminalInput(rows.map((r) => ({ ...r, ownerId: r.input.ownerId })))}),
    c as (
      update attempts a
      set ${SET_TERMINAL_FROM_INPUT}
      from i
      where a.id = i.id
        and a.status = 'running'
        and a.owner_id = i.owner_id
        and a.owner_generation = i.generation
        and a.lease_expires_at > now()
      returning a.id, a.owner_id, a.owner_generation
    ), t as (
      insert into attempt_transitions (attempt_id, from_status, to_status, event, owner_id, owner_generation)
      select id, 'running', 'terminal', 'committed', owner_id, owner_generation from c
    )
    select id from c
  `.execute(db)
  // The first input for each applied id is the one that committed; every other input (a different
  // attempt, or the same attempt named again) is classified on a fresh snapshot.
  const appliedIds = new Set(applied.rows.map((r) => r.id))
  const firstIndex = new Map<string, number>()
  rows.forEach((r, i) => {
    if (appliedIds.has(r.input.attemptId) && !firstIndex.has(r.input.attemptId))
      firstIndex.set(r.input.attemptId, i)
  })
  const toClassify = rows.filter((r, i) => firstIndex.get(r.input.attemptId) !== i)
  const states = new Map<
    string,
    {
      status: string
      fingerprint: string | null
      owner_id: string | null
      owner_generation: number
    }
  >()
  if (toClassify.length > 0) {
    const current = await sql<{
      id: string
      status: string
      fingerprint: string | null
      owner_id: string | null
      owner_generation: number
    }>`
      select id, status, fingerprint, owner_id, owner_generation
      from attempts where id = any(${toClassify.map((r) => r.input.attemptId)}::uuid[])
    `.execute(db)
    for (const row of current.rows) states.set(row.id, row)
  }
  return rows.map(({ input, fingerprint }, i): CommitTerminalOutcome => {
    if (firstIndex.get(input.attemptId) === i) return 'committed'
    const state = states.get(input.attemptId)
    if (state === undefined) return 'missing'
    if (state.status === 'terminal')
      return state.fingerprint === fingerprint ? 'replayed' : 'refused'
    if (state.owner_id !== input.ownerId || state.owner_generation !== input.ownerGeneration)
      return 'stale_fence'
    return 'lease_lost'
  })
}

/** Fenced terminal commit of one attempt: `commitTerminals` with a single input. */
export async function commitTerminal(
  db: Db,
  input: CommitTerminalInput,
): Promise<CommitTerminalOutcome> {
  const [outcome] = await commitTerminals(db, [input])
  if (outcome === undefined) throw new Error('commitTerminals returned no outcome')
  return outcome
}
