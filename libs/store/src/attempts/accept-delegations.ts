import { sql } from 'kysely'
import type { Db } from '../db.ts'
import { PARENT_AGENT_PREFIX } from '../sessions/hosted-session.ts'

export interface AcceptDelegationInput {
  /** The namespace the caller's key belongs to; it owns the session, agent and attempt. */
  readonly namespaceId: string
  readonly sessionId: string
  readonly name: string
  readonly prompt: unknown
  readonly metadata: Readonly<Record<string, unknown>>
  /** Fresh ids minted by the caller for this request. */
  readonly attemptId: string
  readonly newAgentId: string
  /** Present to continue a known agent of this session and name; absent for a new agent. */
  readonly agentId?: string | undefined
  /** The caller's key, unique per session: a retry with it answers the first attempt. */
  readonly idempotencyKey?: string | undefined
  /** Digest of the request the key came with; the key reused with another request is refused. */
  readonly requestDigest?: string | undefined
  /** The run that makes the delegation: a run of the same namespace and session. */
  readonly parentRunId?: string | undefined
  /**
   * The attempt that makes the delegation (a child delegating its own children): an attempt of
   * the same namespace and session that has not finished.
   */
  readonly parentAttemptId?: string | undefined
}

export type AcceptDelegationOutcome =
  | { readonly kind: 'accepted'; readonly agentId: string; readonly attemptId: string }
  /** The key was used before with the same request: the attempt it created. Nothing written. */
  | { readonly kind: 'replayed'; readonly agentId: string; readonly attemptId: string }
  /** The key was used before with a different request. Nothing written. */
  | { readonly kind: 'key_reused' }
  /** No agent with that id in this session under this name. Nothing written. */
  | { readonly kind: 'agent_not_found' }
  /** The agent has an attempt that is not terminal. Nothing written. */
  | { readonly kind: 'agent_busy' }
  /** No run with that id in this session. Nothing written. */
  | { readonly kind: 'run_not_found' }
  /** The parent run is not active (not started, or ended). Nothing written. */
  | { readonly kind: 'run_not_active'; readonly status: string }
  /** The session is behind its deletion fence. Nothing written. */
  | { readonly kind: 'session_deleted' }
  /** No attempt with that id in this session that has not finished. Nothing written. */
  | { readonly kind: 'parent_attempt_ended' }

/**
 * Accept delegations, many per statement (one round trip, one commit), answered per input.
 * Inputs: per delegation the session, subagent name, prompt, metadata, fresh agent/attempt ids,
 * optionally the agent it continues, optionally an idempotency key and request digest.
 * The attempt insert is arbitrated by the unique indexes: (namespace, session, key) for keyed inputs and
 * `attempts_one_active_per_agent` for continuations; a continuation is inserted only if its agent
 * exists in its session under its name, one naming a parent run only if that run is of its session
 * and active, one naming a parent attempt only if that attempt is of its session and not
 * terminal, and none into a deleted session (all checked in the same statement). Each attempt's
 * depth is set here (0080): one more than its parent attempt's, 0 for a session parent's own, null
 * (depth 1) for any other. The deletion
 * fence is read under a share lock on the session's row: a concurrent delete waits for this
 * statement's transaction, or this statement waits for the delete and reads the fence it set, so
 * no attempt is ever accepted after the fence. The session, agent (new delegations only) and audit
 * rows are written for the attempts actually inserted. An input that was not inserted — its key taken
 * (by an earlier request, a concurrent one whose commit the insert waited for, or an earlier input
 * of the same batch), its agent busy or missing — writes nothing and is classified by a second
 * statement on a fresh snapshot; a batch in which everything was inserted is one statement.
 * Outcomes per input: accepted | replayed | key_reused | agent_not_found | agent_busy |
 * run_not_found | run_not_active | session_deleted | parent_attempt_ended.
 * Retry safety: a keyed retry after a lost answer is `replayed`; an unkeyed retry is a new
 * delegation (callers mint fresh ids).
 */
export async function acceptDelegations(
  db: Db,
  inputs: readonly AcceptDelegationInput[],
): Promise<AcceptDelegationOutcome[]> {
  if (inputs.length === 0) return []
  // The first array is read through a subquery so that the planner sizes `input` the same way
  // whatever the batch: planned for its actual arrays, a one-delegation batch looked cheaper than
  // the generic plan every time, and Postgres planned this statement afresh on every accept, at
  // a cost above its execution. Sized alike, it keeps one generic plan.
  const inserted = await sql<{ id: string }>`
    with input as (
      select * from unnest(
        (select ${inputs.map((i) => i.attemptId)}::uuid[]),
        ${inputs.map((i) => i.newAgentId)}::uuid[],
        ${inputs.map((i) => i.agentId ?? null)}::uuid[],
        ${inputs.map((i) => i.namespaceId)}::text[],
        ${inputs.map((i) => i.sessionId)}::text[],
        ${inputs.map((i) => i.name)}::text[],
        ${inputs.map((i) => JSON.stringify(i.prompt))}::jsonb[],
        ${inputs.map((i) => JSON.stringify(i.metadata))}::jsonb[],
        ${inputs.map((i) => i.idempotencyKey ?? null)}::text[],
        ${inputs.map((i) => i.requestDigest ?? null)}::text[],
        ${inputs.map((i) => i.parentRunId ?? null)}::uuid[],
        ${inputs.map((i) => i.parentAttemptId ?? null)}::uuid[]
      ) with ordinality as i(attempt_id, new_agent_id, continued_agent_id, namespace_id, session_id, name,
                             prompt, metadata, idempotency_key, request_digest, parent_run_id,
                             parent_attempt_id, ord)
    ), fence as (
      -- Locked, not only read: a session deleted concurrently is seen as deleted (the lock waits
      -- for the delete, and reads the row as it left it), or its delete waits for this accept.
      select s.namespace_id, s.id, s.deleted_at from sessions s
      where (s.namespace_id, s.id) in (select namespace_id, session_id from input)
      for share
    ), ins as (
      insert into attempts (id, namespace_id, agent_id, session_id, name, prompt, metadata, status,
                            idempotency_key, request_digest, parent_run_id, parent_attempt_id,
                            depth)
      select i.attempt_id, i.namespace_id, coalesce(i.continued_agent_id, i.new_agent_id),
             i.session_id, i.name, i.prompt, i.metadata, 'accepted', i.idempotency_key,
             i.request_digest, i.parent_run_id, i.parent_attempt_id,
             case when starts_with(i.name, ${PARENT_AGENT_PREFIX}) then 0
                  when i.parent_attempt_id is not null then coalesce(p.depth, 1) + 1 end
      from input i
      -- The parent attempt, read once: it must be of the session and not finished, and the
      -- child is one deeper.
      left join lateral (select p.depth, true as found from attempts p
                         where p.id = i.parent_attempt_id and p.namespace_id = i.namespace_id
                           and p.session_id = i.session_id and p.status <> 'terminal') p on true
      where (i.continued_agent_id is null
             or exists (select 1 from agents ag
                        where ag.id = i.continued_agent_id and ag.namespace_id = i.namespace_id
                          and ag.session_id = i.session_id and ag.name = i.name))
        and (i.parent_run_id is null
             or exists (select 1 from runs r
                        where r.id = i.parent_run_id and r.namespace_id = i.namespace_id
                          and r.session_id = i.session_id and r.status = 'active'))
        and (i.parent_attempt_id is null or p.found)
        and not exists (select 1 from fence f
                        where f.namespace_id = i.namespace_id and f.id = i.session_id
                          and f.deleted_at is not null)
      order by i.ord
      on conflict do nothing
      returning id, session_id
    ), fresh as (
      select i.* from input i join ins on ins.id = i.attempt_id where i.continued_agent_id is null
    ), s as (
      insert into sessions (namespace_id, id)
      select distinct namespace_id, session_id from fresh
      on conflict (namespace_id, id) do nothing
    ), ag as (
      insert into agents (id, namespace_id, session_id, name)
      select new_agent_id, namespace_id, session_id, name from fresh
    ), t as (
      insert into attempt_transitions (attempt_id, session_id, from_status, to_status, event,
                                       owner_generation)
      select id, session_id, null, 'accepted', 'accepted', 0 from ins
    )
    select id from ins
  `.execute(db)
  const accepted = new Set(inserted.rows.map((r) => r.id))
  const refused = inputs.filter((i) => !accepted.has(i.attemptId))
  const why = refused.length === 0 ? emptyFindings() : await classifyRefused(db, refused)
  return inputs.map((input): AcceptDelegationOutcome => {
    if (accepted.has(input.attemptId))
      return {
        kind: 'accepted',
        agentId: input.agentId ?? input.newAgentId,
        attemptId: input.attemptId,
      }
    const owner =
      input.idempotencyKey === undefined
        ? undefined
        : why.keyOwners.get(keyOf(input.namespaceId, input.sessionId, input.idempotencyKey))
    if (owner !== undefined) {
      return owner.request_digest === (input.requestDigest ?? null)
        ? { kind: 'replayed', agentId: owner.agent_id, attemptId: owner.id }
        : { kind: 'key_reused' }
    }
    const fenced = refusedBySession(input, why)
    if (fenced !== undefined) return fenced
    if (input.agentId === undefined) {
      // A pending continuation run named as parent, claimed (active) since the insert's snapshot.
      if (input.parentRunId !== undefined) return { kind: 'run_not_active', status: 'pending' }
      throw new Error('accept: a new delegation was neither inserted nor refused by its key')
    }
    // The agent exists in this session under this name, so only its active attempt stood in the way.
    return why.agents.has(agentKeyOf(input.namespaceId, input.sessionId, input.name, input.agentId))
      ? { kind: 'agent_busy' }
      : { kind: 'agent_not_found' }
  })
}

interface Findings {
  readonly keyOwners: Map<string, { id: string; agent_id: string; request_digest: string | null }>
  readonly agents: Set<string>
  /** Runs named as parents (with their status), and sessions behind their deletion fence. */
  readonly runs: Map<string, string>
  readonly deletedSessions: Set<string>
  /** Attempts named as parents that are of their session and not terminal. */
  readonly activeParents: Set<string>
}

function emptyFindings(): Findings {
  return {
    keyOwners: new Map(),
    agents: new Set(),
    runs: new Map(),
    deletedSessions: new Set(),
    activeParents: new Set(),
  }
}

/**
 * A refusal by the session's deletion fence, or by a parent run outside the session or not
 * active, if any.
 */
function refusedBySession(
  input: AcceptDelegationInput,
  why: Findings,
):
  | { readonly kind: 'run_not_found' | 'session_deleted' | 'parent_attempt_ended' }
  | { readonly kind: 'run_not_active'; readonly status: string }
  | undefined {
  if (why.deletedSessions.has(JSON.stringify([input.namespaceId, input.sessionId])))
    return { kind: 'session_deleted' }
  if (
    input.parentAttemptId !== undefined &&
    !why.activeParents.has(
      agentKeyOf(input.namespaceId, input.sessionId, '', input.parentAttemptId),
    )
  )
    return { kind: 'parent_attempt_ended' }
  if (input.parentRunId === undefined) return undefined
  const status = why.runs.get(agentKeyOf(input.namespaceId, input.sessionId, '', input.parentRunId))
  if (status === undefined) return { kind: 'run_not_found' }
  return status === 'active' ? undefined : { kind: 'run_not_active', status }
}

/**
 * Why inputs were not inserted, on a snapshot newer than the insert's: a key is never released
 * and an agent never deleted, so what the insert waited for is visible here.
 */
async function classifyRefused(
  db: Db,
  refused: readonly AcceptDelegationInput[],
): Promise<Findings> {
  const result = await sql<{
    kind: 'key' | 'agent' | 'run' | 'deleted' | 'parent'
    namespace_id: string
    session_id: string
    lookup: string
    id: string
    agent_id: string
    request_digest: string | null
  }>`
    with k as (
      select * from unnest(
        ${refused.map((i) => i.namespaceId)}::text[],
        ${refused.map((i) => i.sessionId)}::text[],
        ${refused.map((i) => i.idempotencyKey ?? null)}::text[],
        ${refused.map((i) => i.agentId ?? null)}::uuid[],
        ${refused.map((i) => i.name)}::text[],
        ${refused.map((i) => i.parentRunId ?? null)}::uuid[],
        ${refused.map((i) => i.parentAttemptId ?? null)}::uuid[]
      ) as k(namespace_id, session_id, idempotency_key, agent_id, name, parent_run_id,
             parent_attempt_id)
    )
    select 'key' as kind, a.namespace_id, a.session_id, a.idempotency_key as lookup, a.id,
           a.agent_id, a.request_digest
    from attempts a join k
      on a.namespace_id = k.namespace_id and a.session_id = k.session_id
         and a.idempotency_key = k.idempotency_key
    union all
    select 'agent', ag.namespace_id, ag.session_id, ag.name, ag.id, ag.id, null
    from agents ag join k
      on ag.id = k.agent_id and ag.namespace_id = k.namespace_id
         and ag.session_id = k.session_id and ag.name = k.name
    union all
    select 'run', r.namespace_id, r.session_id, r.status, r.id, r.id, null
    from runs r join k
      on r.id = k.parent_run_id and r.namespace_id = k.namespace_id and r.session_id = k.session_id
    union all
    select 'parent', p.namespace_id, p.session_id, '', p.id, p.id, null
    from attempts p join k
      on p.id = k.parent_attempt_id and p.namespace_id = k.namespace_id
         and p.session_id = k.session_id
    where p.status <> 'terminal'
    union all
    select distinct 'deleted', s.namespace_id, s.id, '', null::uuid, null::uuid, null
    from sessions s join k on s.namespace_id = k.namespace_id and s.id = k.session_id
    where s.deleted_at is not null
  `.execute(db)
  const findings = emptyFindings()
  for (const row of result.rows) {
    if (row.kind === 'key')
      findings.keyOwners.set(keyOf(row.namespace_id, row.session_id, row.lookup), row)
    else if (row.kind === 'deleted')
      findings.deletedSessions.add(JSON.stringify([row.namespace_id, row.session_id]))
    else if (row.kind === 'parent')
      findings.activeParents.add(agentKeyOf(row.namespace_id, row.session_id, '', row.id))
    else if (row.kind === 'run')
      findings.runs.set(agentKeyOf(row.namespace_id, row.session_id, '', row.id), row.lookup)
    else findings.agents.add(agentKeyOf(row.namespace_id, row.session_id, row.lookup, row.agent_id))
  }
  return findings
}

function keyOf(namespaceId: string, sessionId: string, idempotencyKey: string): string {
  return JSON.stringify([namespaceId, sessionId, idempotencyKey])
}

function agentKeyOf(namespaceId: string, sessionId: string, name: string, agentId: string): string {
  return JSON.stringify([namespaceId, sessionId, name, agentId])
}
