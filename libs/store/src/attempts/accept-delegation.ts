import { sql, type RawBuilder } from 'kysely'
import type { Db } from '../db.ts'
import { isUniqueViolation } from '../pg-errors.ts'

export interface NewDelegationInput {
  readonly sessionId: string
  readonly name: string
  readonly prompt: unknown
  readonly metadata: Readonly<Record<string, unknown>>
  /** Fresh ids minted by the caller for this request. */
  readonly attemptId: string
  readonly newAgentId: string
}

export interface AcceptDelegationInput extends NewDelegationInput {
  /** Present to continue a known agent; absent for a new delegation (a new agent). */
  readonly agentId?: string
}

export type AcceptDelegationOutcome =
  | { readonly kind: 'accepted'; readonly agentId: string; readonly attemptId: string }
  | { readonly kind: 'agent_not_found' }
  | { readonly kind: 'agent_busy' }

/**
 * Accept new delegations, many per statement (one round trip, one commit).
 * Inputs: per delegation the session, subagent name, prompt, metadata and fresh agent/attempt ids.
 * Inserts each session if new, a new agent, the `accepted` attempt and its audit row. Nothing in
 * a new delegation can conflict (ids are fresh), so the only failure is the store's own, and then
 * no row of the batch is written.
 * Retry safety: not idempotent by itself; a caller retrying mints fresh ids.
 */
export async function acceptNewDelegations(
  db: Db,
  inputs: readonly NewDelegationInput[],
): Promise<void> {
  if (inputs.length === 0) return
  await sql`
    with input as (
      select * from unnest(${newDelegationArrays(inputs)})
        as i(attempt_id, agent_id, session_id, name, prompt, metadata)
    ), s as (
      insert into sessions (id, namespace_id)
      select distinct session_id, 'default' from input
      on conflict (id) do nothing
    ), ag as (
      insert into agents (id, session_id, name)
      select agent_id, session_id, name from input
    ), at as (
      insert into attempts (id, agent_id, session_id, name, prompt, metadata, status)
      select attempt_id, agent_id, session_id, name, prompt, metadata, 'accepted' from input
    )
    insert into attempt_transitions (attempt_id, from_status, to_status, event, owner_generation)
    select attempt_id, null, 'accepted', 'accepted', 0 from input
  `.execute(db)
}

/**
 * The `unnest` arguments for new delegations, one array per column: attempt id, agent id,
 * session id, name, prompt, metadata.
 */
export function newDelegationArrays(inputs: readonly NewDelegationInput[]): RawBuilder<unknown> {
  return sql`
    ${inputs.map((i) => i.attemptId)}::uuid[],
    ${inputs.map((i) => i.newAgentId)}::uuid[],
    ${inputs.map((i) => i.sessionId)}::text[],
    ${inputs.map((i) => i.name)}::text[],
    ${inputs.map((i) => JSON.stringify(i.prompt))}::jsonb[],
    ${inputs.map((i) => JSON.stringify(i.metadata))}::jsonb[]
  `
}

/**
 * Accept one delegation. A new delegation goes through `acceptNewDelegations`. A continuation
 * inserts the attempt only if the agent exists in this session under this name; the partial
 * unique index `attempts_one_active_per_agent` refuses it while the agent has a non-terminal
 * attempt. Outcomes: `accepted` | `agent_not_found` | `agent_busy` — the last two write nothing.
 */
export async function acceptDelegation(
  db: Db,
  input: AcceptDelegationInput,
): Promise<AcceptDelegationOutcome> {
  if (input.agentId === undefined) {
    await acceptNewDelegations(db, [input])
    return { kind: 'accepted', agentId: input.newAgentId, attemptId: input.attemptId }
  }
  try {
    const result = await sql<{ id: string }>`
      with ag as (
        select id from agents
        where id = ${input.agentId} and session_id = ${input.sessionId} and name = ${input.name}
      ), at as (
        insert into attempts (id, agent_id, session_id, name, prompt, metadata, status)
        select ${input.attemptId}, ag.id, ${input.sessionId}, ${input.name},
               ${JSON.stringify(input.prompt)}::jsonb, ${JSON.stringify(input.metadata)}::jsonb, 'accepted'
        from ag
        returning id
      )
      insert into attempt_transitions (attempt_id, from_status, to_status, event, owner_generation)
      select id, null, 'accepted', 'accepted', 0 from at
      returning attempt_id as id
    `.execute(db)
    if (result.rows.length === 0) return { kind: 'agent_not_found' }
    return { kind: 'accepted', agentId: input.agentId, attemptId: input.attemptId }
  } catch (error) {
    if (isUniqueViolation(error, 'attempts_one_active_per_agent')) return { kind: 'agent_busy' }
    throw error
  }
}
