import { sql } from 'kysely'
import type { Db } from '../db.ts'
import { isUniqueViolation } from '../pg-errors.ts'

export interface AcceptDelegationInput {
  readonly sessionId: string
  readonly name: string
  readonly prompt: unknown
  readonly metadata: Readonly<Record<string, unknown>>
  /** A fresh id for the attempt (and for the agent, when `agentId` is absent). */
  readonly attemptId: string
  /** Present to continue a known agent; absent for a new delegation (a new agent). */
  readonly agentId?: string
  readonly newAgentId: string
}

export type AcceptDelegationOutcome =
  | { readonly kind: 'accepted'; readonly agentId: string; readonly attemptId: string }
  | { readonly kind: 'agent_not_found' }
  | { readonly kind: 'agent_busy' }

/**
 * Accept a delegation: one statement, so one round trip and one commit.
 *
 * New delegation: inserts the session (if new), a new agent, the attempt (`accepted`) and its
 * audit row. Continuation: inserts the attempt for the caller's agent only if that agent exists in
 * this session under this name, and the partial unique index `attempts_one_active_per_agent`
 * refuses it while the agent has a non-terminal attempt.
 *
 * Outcomes: `accepted` | `agent_not_found` (nothing written) | `agent_busy` (nothing written).
 * Retry safety: not idempotent by itself; the caller mints fresh ids per request.
 */
export async function acceptDelegation(
  db: Db,
  input: AcceptDelegationInput,
): Promise<AcceptDelegationOutcome> {
  const prompt = JSON.stringify(input.prompt)
  const metadata = JSON.stringify(input.metadata)
  try {
    if (input.agentId === undefined) {
      await sql`
        with s as (
          insert into sessions (id, namespace_id) values (${input.sessionId}, 'default')
          on conflict (id) do nothing
        ), ag as (
          insert into agents (id, session_id, name)
          values (${input.newAgentId}, ${input.sessionId}, ${input.name})
        ), at as (
          insert into attempts (id, agent_id, session_id, name, prompt, metadata, status)
          values (${input.attemptId}, ${input.newAgentId}, ${input.sessionId}, ${input.name},
                  ${prompt}::jsonb, ${metadata}::jsonb, 'accepted')
        )
        insert into attempt_transitions (attempt_id, from_status, to_status, event, owner_generation)
        values (${input.attemptId}, null, 'accepted', 'accepted', 0)
      `.execute(db)
      return { kind: 'accepted', agentId: input.newAgentId, attemptId: input.attemptId }
    }
    const result = await sql<{ id: string }>`
      with ag as (
        select id from agents
        where id = ${input.agentId} and session_id = ${input.sessionId} and name = ${input.name}
      ), at as (
        insert into attempts (id, agent_id, session_id, name, prompt, metadata, status)
        select ${input.attemptId}, ag.id, ${input.sessionId}, ${input.name},
               ${prompt}::jsonb, ${metadata}::jsonb, 'accepted'
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
