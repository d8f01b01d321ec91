import { sql } from 'kysely'
import type { Db } from '../db.ts'
import { isUniqueViolation } from '../pg-errors.ts'
import type { AcceptDelegationInput } from './accept-delegation.ts'

export interface IdempotentAcceptInput extends AcceptDelegationInput {
  /** The caller's key; unique per session. */
  readonly idempotencyKey: string
  /** Digest of the request the key was sent with; a reuse with another request is refused. */
  readonly requestDigest: string
}

export type IdempotentAcceptOutcome =
  | { readonly kind: 'accepted'; readonly agentId: string; readonly attemptId: string }
  /** The key was used before with the same request: the attempt it created. Nothing written. */
  | { readonly kind: 'replayed'; readonly agentId: string; readonly attemptId: string }
  /** The key was used before with a different request. Nothing written. */
  | { readonly kind: 'key_reused' }
  | { readonly kind: 'agent_not_found' }
  | { readonly kind: 'agent_busy' }

interface Row {
  inserted: string | null
  inserted_agent: string | null
  existing_id: string | null
  existing_agent: string | null
  existing_digest: string | null
}

/**
 * Accept a delegation under an idempotency key, in one statement. Inputs: the delegation (new, or
 * a continuation of `agentId`), the key and the request digest. The attempt insert is arbitrated by
 * the unique index on (session, key): on a conflict nothing at all is written and the statement
 * reports the attempt that owns the key. Session, agent and audit rows are inserted only with a new
 * attempt. A concurrent first use of the same key commits first and is then seen on a fresh
 * snapshot (the statement runs once more).
 * Outcomes: accepted | replayed | key_reused | agent_not_found | agent_busy.
 * Retry safety: the point of it — a retry after a lost answer is `replayed`.
 */
export async function acceptIdempotent(
  db: Db,
  input: IdempotentAcceptInput,
): Promise<IdempotentAcceptOutcome> {
  const isNew = input.agentId === undefined
  const agentRef = input.agentId ?? input.newAgentId
  for (let round = 0; round < 2; round += 1) {
    let row: Row | undefined
    try {
      const result = await sql<Row>`
        with ins as (
          insert into attempts (id, agent_id, session_id, name, prompt, metadata, status,
                                idempotency_key, request_digest)
          select ${input.attemptId}, ${agentRef}, ${input.sessionId}, ${input.name},
                 ${JSON.stringify(input.prompt)}::jsonb, ${JSON.stringify(input.metadata)}::jsonb,
                 'accepted', ${input.idempotencyKey}, ${input.requestDigest}
          where ${isNew}::boolean or exists (
            select 1 from agents
            where id = ${agentRef} and session_id = ${input.sessionId} and name = ${input.name}
          )
          on conflict (session_id, idempotency_key) where idempotency_key is not null do nothing
          returning id, agent_id
        ), s as (
          insert into sessions (id, namespace_id)
          select ${input.sessionId}, 'default' from ins where ${isNew}::boolean
          on conflict (id) do nothing
        ), ag as (
          insert into agents (id, session_id, name)
          select agent_id, ${input.sessionId}, ${input.name} from ins where ${isNew}::boolean
        ), t as (
          insert into attempt_transitions (attempt_id, from_status, to_status, event, owner_generation)
          select id, null, 'accepted', 'accepted', 0 from ins
        )
        select (select id from ins) as inserted,
               (select agent_id from ins) as inserted_agent,
               e.id as existing_id, e.agent_id as existing_agent, e.request_digest as existing_digest
        from (select 1) as one
        left join attempts e on e.session_id = ${input.sessionId} and e.idempotency_key = ${input.idempotencyKey}
      `.execute(db)
      row = result.rows[0]
    } catch (error) {
      if (isUniqueViolation(error, 'attempts_one_active_per_agent')) return { kind: 'agent_busy' }
      throw error
    }
    if (row?.inserted != null && row.inserted_agent != null) {
      return { kind: 'accepted', agentId: row.inserted_agent, attemptId: row.inserted }
    }
    if (row?.existing_id != null && row.existing_agent != null) {
      return row.existing_digest === input.requestDigest
        ? { kind: 'replayed', agentId: row.existing_agent, attemptId: row.existing_id }
        : { kind: 'key_reused' }
    }
    // Neither inserted nor visible: a concurrent first use committed after this snapshot, or
    // (continuations) the agent does not exist. A fresh statement tells which.
    if (!isNew && round === 1) return { kind: 'agent_not_found' }
  }
  throw new Error('idempotent accept: the key was neither inserted nor found')
}
