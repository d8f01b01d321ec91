import { sql } from 'kysely'
import type { Db } from '../db.ts'
import { isUniqueViolation } from '../pg-errors.ts'
import { newDelegationArrays } from './accept-delegation.ts'
import type { AcceptDelegationInput, NewDelegationInput } from './accept-delegation.ts'

interface IdempotencyFields {
  /** The caller's key; unique per session. */
  readonly idempotencyKey: string
  /** Digest of the request the key was sent with; a reuse with another request is refused. */
  readonly requestDigest: string
}

/** A delegation (new, or a continuation of `agentId`) under an idempotency key. */
export interface IdempotentAcceptInput extends AcceptDelegationInput, IdempotencyFields {}

/** A new delegation (no `agentId`) under an idempotency key: the batchable kind. */
export interface IdempotentNewInput extends NewDelegationInput, IdempotencyFields {}

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
 * Accept new delegations under idempotency keys, many per statement. Inputs: per delegation the
 * session, name, prompt, metadata, fresh agent/attempt ids, the key and the request digest. Each
 * attempt insert is arbitrated by the unique index on (session, key); the session, agent and audit
 * rows are written only for the attempts actually inserted. An input whose key is taken — by an
 * earlier request, a concurrent one (the insert waits for it to commit) or an earlier input of the
 * same batch — writes nothing and is classified on a fresh snapshot.
 * Outcomes per input: accepted | replayed (same request: the attempt the key created) | key_reused.
 * Retry safety: the point of it — a retry after a lost answer is `replayed`.
 */
export async function acceptNewIdempotent(
  db: Db,
  inputs: readonly IdempotentNewInput[],
): Promise<IdempotentAcceptOutcome[]> {
  if (inputs.length === 0) return []
  const inserted = await sql<{ id: string }>`
    with input as (
      select * from unnest(
        ${newDelegationArrays(inputs)},
        ${inputs.map((i) => i.idempotencyKey)}::text[],
        ${inputs.map((i) => i.requestDigest)}::text[]
      ) with ordinality as i(attempt_id, agent_id, session_id, name, prompt, metadata,
                             idempotency_key, request_digest, ord)
    ), ins as (
      insert into attempts (id, agent_id, session_id, name, prompt, metadata, status,
                            idempotency_key, request_digest)
      select attempt_id, agent_id, session_id, name, prompt, metadata, 'accepted',
             idempotency_key, request_digest
      from input order by ord
      on conflict (session_id, idempotency_key) where idempotency_key is not null do nothing
      returning id, agent_id, session_id, name
    ), s as (
      insert into sessions (id, namespace_id)
      select distinct session_id, 'default' from ins
      on conflict (id) do nothing
    ), ag as (
      insert into agents (id, session_id, name) select agent_id, session_id, name from ins
    ), t as (
      insert into attempt_transitions (attempt_id, from_status, to_status, event, owner_generation)
      select id, null, 'accepted', 'accepted', 0 from ins
    )
    select id from ins
  `.execute(db)
  const accepted = new Set(inserted.rows.map((r) => r.id))
  const others = inputs.filter((i) => !accepted.has(i.attemptId))
  const owners = new Map<string, { id: string; agent_id: string; request_digest: string | null }>()
  if (others.length > 0) {
    const existing = await sql<{
      session_id: string
      idempotency_key: string
      id: string
      agent_id: string
      request_digest: string | null
    }>`
      select a.session_id, a.idempotency_key, a.id, a.agent_id, a.request_digest
      from attempts a
      join unnest(
        ${others.map((i) => i.sessionId)}::text[],
        ${others.map((i) => i.idempotencyKey)}::text[]
      ) as k(session_id, idempotency_key)
        on a.session_id = k.session_id and a.idempotency_key = k.idempotency_key
    `.execute(db)
    for (const row of existing.rows) owners.set(keyOf(row.session_id, row.idempotency_key), row)
  }
  return inputs.map((input): IdempotentAcceptOutcome => {
    if (accepted.has(input.attemptId))
      return { kind: 'accepted', agentId: input.newAgentId, attemptId: input.attemptId }
    const owner = owners.get(keyOf(input.sessionId, input.idempotencyKey))
    // Not inserted because the key was taken, and keys are never released.
    if (owner === undefined)
      throw new Error('idempotent accept: the key was neither inserted nor found')
    return owner.request_digest === input.requestDigest
      ? { kind: 'replayed', agentId: owner.agent_id, attemptId: owner.id }
      : { kind: 'key_reused' }
  })
}

function keyOf(sessionId: string, idempotencyKey: string): string {
  return JSON.stringify([sessionId, idempotencyKey])
}

/**
 * Accept one delegation under an idempotency key. A new delegation goes through
 * `acceptNewIdempotent`. A continuation (`agentId`) is one statement: the attempt insert is
 * arbitrated by the unique index on (session, key) and happens only if the agent exists in this
 * session under this name; on a conflict nothing is written and the statement reports the attempt
 * that owns the key. A concurrent first use of the same key commits first and is then seen on a
 * fresh snapshot (the statement runs once more).
 * Outcomes: accepted | replayed | key_reused | agent_not_found | agent_busy.
 */
export async function acceptIdempotent(
  db: Db,
  input: IdempotentAcceptInput,
): Promise<IdempotentAcceptOutcome> {
  const agentId = input.agentId
  if (agentId === undefined) {
    const [outcome] = await acceptNewIdempotent(db, [input])
    if (outcome === undefined) throw new Error('acceptNewIdempotent returned no outcome')
    return outcome
  }
  for (let round = 0; round < 2; round += 1) {
    let row: Row | undefined
    try {
      const result = await sql<Row>`
        with ins as (
          insert into attempts (id, agent_id, session_id, name, prompt, metadata, status,
                                idempotency_key, request_digest)
          select ${input.attemptId}, ag.id, ${input.sessionId}, ${input.name},
                 ${JSON.stringify(input.prompt)}::jsonb, ${JSON.stringify(input.metadata)}::jsonb,
                 'accepted', ${input.idempotencyKey}, ${input.requestDigest}
          from agents ag
          where ag.id = ${agentId} and ag.session_id = ${input.sessionId} and ag.name = ${input.name}
          on conflict (session_id, idempotency_key) where idempotency_key is not null do nothing
          returning id, agent_id
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
    // Neither inserted nor visible: a concurrent first use committed after this snapshot, or the
    // agent does not exist. A fresh statement tells which.
    if (round === 1) return { kind: 'agent_not_found' }
  }
  throw new Error('idempotent accept: unreachable')
}
