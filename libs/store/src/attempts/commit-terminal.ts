import { sql } from 'kysely'
import type { Db } from '../db.ts'
import { historyLength } from './agent-history.ts'
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
  /**
   * Still owned, but the context delta does not start at the agent's current history length:
   * nothing was written. Commit again without the delta.
   */
  | 'history_conflict'
  | 'missing'

interface AttemptState {
  readonly status: string
  readonly fingerprint: string | null
  readonly owner_id: string | null
  readonly owner_generation: number
  readonly lease_live: boolean
  readonly context_length: number
}

/**
 * Fenced terminal commits, many per statement.
 * Inputs per attempt: id, owner id and generation (the fence), the result and its optional
 * context delta. Each applies only while the attempt is `running`, owned by (owner, generation),
 * its lease is live at the database's `now()`, and its delta (if any) starts exactly at its agent's
 * current history length; it stores the projection and its fingerprint, appends the audit row and
 * appends the delta's events in the same statement — so a child's history is visible only once its
 * terminal commit succeeded. Commits that did not apply are classified on a fresh snapshot.
 * Outcomes: committed | replayed | refused | lease_lost | stale_fence | history_conflict | missing.
 * Retry safety: an exact retry (same fingerprint, which binds the delta) after a lost response is
 * `replayed` and appends nothing.
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
  // Only the first input naming an attempt is applied; any repeat is classified afterwards.
  const firstIndex = new Map<string, number>()
  rows.forEach((r, i) => {
    if (!firstIndex.has(r.input.attemptId)) firstIndex.set(r.input.attemptId, i)
  })
  const candidates = rows.filter((r, i) => firstIndex.get(r.input.attemptId) === i)
  const delta = candidates.flatMap(({ input }) =>
    (input.result.history?.events ?? []).map((event, offset) => ({
      attemptId: input.attemptId,
      seq: (input.result.history?.baseSeq ?? 0) + offset,
      event: JSON.stringify(event),
    })),
  )
  const applied = await sql<{ id: string }>`
    with i as (${terminalInput(candidates.map((r) => ({ ...r, ownerId: r.input.ownerId })))}),
    c as (
      update attempts a
      set ${SET_TERMINAL_FROM_INPUT}
      from i
      where a.id = i.id
        and a.status = 'running'
        and a.owner_id = i.owner_id
        and a.owner_generation = i.generation
        and a.lease_expires_at > now()
        and (i.context_base is null or i.context_base = ${historyLength(sql.ref('a.agent_id'))})
      returning a.id, a.agent_id, a.owner_id, a.owner_generation
    ), t as (
      insert into attempt_transitions (attempt_id, from_status, to_status, event, owner_id, owner_generation)
      select id, 'running', 'terminal', 'committed', owner_id, owner_generation from c
    ), e as (
      insert into agent_context_events (agent_id, seq, attempt_id, event)
      select c.agent_id, d.seq, d.attempt_id, d.event
      from unnest(
        ${delta.map((d) => d.attemptId)}::uuid[],
        ${delta.map((d) => d.seq)}::int[],
        ${delta.map((d) => d.event)}::jsonb[]
      ) as d(attempt_id, seq, event)
      join c on c.id = d.attempt_id
    )
    select id from c
  `.execute(db)
  const appliedIds = new Set(applied.rows.map((r) => r.id))
  const committed = (i: number, attemptId: string): boolean =>
    appliedIds.has(attemptId) && firstIndex.get(attemptId) === i
  const toClassify = rows.filter((r, i) => !committed(i, r.input.attemptId))
  const states = new Map<string, AttemptState>()
  if (toClassify.length > 0) {
    const current = await sql<AttemptState & { id: string }>`
      select a.id, a.status, a.fingerprint, a.owner_id, a.owner_generation,
             coalesce(a.lease_expires_at > now(), false) as lease_live,
             ${historyLength(sql.ref('a.agent_id'))} as context_length
      from attempts a where a.id = any(${toClassify.map((r) => r.input.attemptId)}::uuid[])
    `.execute(db)
    for (const row of current.rows) states.set(row.id, row)
  }
  return rows.map(({ input, fingerprint, projection }, i): CommitTerminalOutcome => {
    if (committed(i, input.attemptId)) return 'committed'
    const state = states.get(input.attemptId)
    if (state === undefined) return 'missing'
    if (state.status === 'terminal')
      return state.fingerprint === fingerprint ? 'replayed' : 'refused'
    if (state.owner_id !== input.ownerId || state.owner_generation !== input.ownerGeneration)
      return 'stale_fence'
    if (!state.lease_live) return 'lease_lost'
    if (projection.context !== undefined && projection.context.baseSeq !== state.context_length)
      return 'history_conflict'
    // Owned and live but not applied: it lost the row to a concurrent statement; the lease is the
    // safe answer (a retry re-classifies).
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
