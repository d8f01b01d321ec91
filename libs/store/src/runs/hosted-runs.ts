import { sql } from 'kysely'
import type { Db } from '../db.ts'
import { acceptDelegations } from '../attempts/accept-delegations.ts'
import type { RunRow } from '../schema.ts'
import { parentAgentName } from '../sessions/hosted-session.ts'
import { toRunRecord, type RunRecord } from './get-run.ts'

export type CreateHostedRunOutcome =
  | { readonly kind: 'created'; readonly run: RunRecord }
  /** The key's run, queued by an earlier request with the same digest. Nothing written. */
  | { readonly kind: 'replayed'; readonly run: RunRecord }
  /** The key names a run of another request. Nothing written. */
  | { readonly kind: 'key_reused' }
  | { readonly kind: 'session_not_found' }
  /** A host-managed session: its runs are created and ended by its host. */
  | { readonly kind: 'not_hosted' }
  | { readonly kind: 'session_deleted' }

/**
 * Queues a user run of a hosted session: `pending`, with its input, after every run admitted
 * before it (`admission_seq`). The session's row is share-locked against its deletion fence.
 * `startNextRun` starts it when the session has no other run in flight. With an idempotency key,
 * the insert is arbitrated by `runs_idempotency_idx`: the key's run, if any, answers instead (the
 * same digest: `replayed`; another: `key_reused`), also behind the deletion fence, as a keyed
 * delegation's retry does.
 * Outcomes: created | replayed | key_reused | session_not_found | not_hosted | session_deleted.
 * Retry safety: a keyed retry after a lost answer is `replayed`, concurrent first uses of one key
 * included (the insert waits for the other's commit, then the read sees its run); an unkeyed retry
 * with a fresh run id is a new run.
 */
export async function createHostedRun(
  db: Db,
  input: {
    readonly namespaceId: string
    readonly sessionId: string
    readonly runId: string
    readonly input: unknown
    readonly idempotencyKey?: string | undefined
    readonly requestDigest?: string | undefined
  },
): Promise<CreateHostedRunOutcome> {
  return db.transaction().execute(async (trx) => {
    const session = await sql<{ profile: string | null; deleted: boolean }>`
      select profile, deleted_at is not null as deleted from sessions
      where namespace_id = ${input.namespaceId} and id = ${input.sessionId}
      for share
    `.execute(trx)
    const found = session.rows[0]
    if (found === undefined) return { kind: 'session_not_found' } as const
    if (found.profile === null) return { kind: 'not_hosted' } as const
    const keyed = async (): Promise<CreateHostedRunOutcome | undefined> => {
      if (input.idempotencyKey === undefined) return undefined
      const owner = await sql<RunRow>`
        select * from runs
        where namespace_id = ${input.namespaceId} and session_id = ${input.sessionId}
          and idempotency_key = ${input.idempotencyKey}
      `.execute(trx)
      const row = owner.rows[0]
      if (row === undefined) return undefined
      return row.request_digest === (input.requestDigest ?? null)
        ? { kind: 'replayed', run: toRunRecord(row) }
        : { kind: 'key_reused' }
    }
    const earlier = await keyed()
    if (earlier !== undefined) return earlier
    if (found.deleted) return { kind: 'session_deleted' } as const
    const run = await sql<RunRow>`
      insert into runs (id, namespace_id, session_id, trigger_type, status, input,
                        idempotency_key, request_digest)
      values (${input.runId}::uuid, ${input.namespaceId}, ${input.sessionId}, 'user', 'pending',
              ${JSON.stringify(input.input)}::jsonb, ${input.idempotencyKey ?? null},
              ${input.requestDigest ?? null})
      on conflict (namespace_id, session_id, idempotency_key) where idempotency_key is not null
        do nothing
      returning *
    `.execute(trx)
    const row = run.rows[0]
    if (row !== undefined) return { kind: 'created', run: toRunRecord(row) } as const
    // The key was taken by a request that committed since the read above: its run answers.
    const concurrent = await keyed()
    if (concurrent === undefined) throw new Error('a keyed run insert was neither made nor taken')
    return concurrent
  })
}

/** The next run a hosted session would start, with what its attempt is given. */
interface NextRunRow {
  id: string
  trigger_type: string
  input: unknown
  continuation_input: string | null
  profile: string
  parent_agent_id: string
}

/**
 * Starts the session's oldest pending hosted run, if the session has no run in flight: accepts
 * it as an attempt of the session's parent agent, with the run's id, through the one admission
 * path (`acceptDelegations`). A user run's attempt is given its input; a continuation run's, the
 * canonical input its receipt binds. The index that allows one non-terminal attempt per agent
 * decides: while another run of the session is in flight nothing is written (`undefined`). Behind
 * the deletion fence, the session's pending user runs are cancelled instead.
 * Answers the run id whose attempt was accepted (the caller enqueues its job), or `undefined`.
 * Retry safety: starting twice is refused by that index, or by the attempt's primary key.
 */
export async function startNextRun(
  db: Db,
  session: { readonly namespaceId: string; readonly sessionId: string },
): Promise<string | undefined> {
  const next = await sql<NextRunRow>`
    select r.id, r.trigger_type, r.input, c.input as continuation_input, s.profile,
           s.parent_agent_id
    from runs r
    join sessions s on s.namespace_id = r.namespace_id and s.id = r.session_id
    left join continuations c on c.consumer_run_id = r.id
    where r.namespace_id = ${session.namespaceId} and r.session_id = ${session.sessionId}
      and r.hosted and r.status = 'pending'
    order by r.admission_seq
    limit 1
  `.execute(db)
  const run = next.rows[0]
  if (run === undefined) return undefined
  const [outcome] = await acceptDelegations(db, [
    {
      namespaceId: session.namespaceId,
      sessionId: session.sessionId,
      name: parentAgentName(run.profile),
      prompt: run.trigger_type === 'async_subagent_result' ? run.continuation_input : run.input,
      metadata: {},
      attemptId: run.id,
      newAgentId: run.parent_agent_id,
      agentId: run.parent_agent_id,
    },
  ])
  if (outcome?.kind === 'accepted') return run.id
  if (outcome?.kind === 'session_deleted') {
    await sql`
      update runs set status = 'cancelled', settled_at = now()
      where namespace_id = ${session.namespaceId} and session_id = ${session.sessionId}
        and hosted and status = 'pending' and trigger_type = 'user'
    `.execute(db)
  }
  return undefined
}

/**
 * Cancels a hosted run that has no attempt yet (still queued behind another run of its session):
 * it ends `cancelled`, and a continuation it was to consume is suppressed naming it. A run whose
 * attempt exists is cancelled through its attempt instead.
 * Outcome: the run as it is now, or `undefined` when it is not such a run.
 * Retry safety: applies only to a pending run without an attempt.
 */
export async function cancelQueuedHostedRun(
  db: Db,
  namespaceId: string,
  runId: string,
): Promise<RunRecord | undefined> {
  return db.transaction().execute(async (trx) => {
    const updated = await sql<RunRow>`
      update runs set status = 'cancelled', settled_at = now()
      where id = ${runId}::uuid and namespace_id = ${namespaceId} and hosted
        and status = 'pending' and not exists (select 1 from attempts a where a.id = runs.id)
      returning *
    `.execute(trx)
    const row = updated.rows[0]
    if (row === undefined) return undefined
    await sql`
      update continuations
      set state = 'suppressed', suppression_reason = 'consumer_cancelled',
          suppression_run_id = ${runId}::uuid
      where consumer_run_id = ${runId}::uuid and state = 'pending'
    `.execute(trx)
    return toRunRecord(row)
  })
}

/** Hosted sessions with a pending run and no attempt in flight, for the reconciler's sweep. */
export async function idleHostedSessions(
  db: Db,
  limit: number,
): Promise<{ readonly namespaceId: string; readonly sessionId: string }[]> {
  const result = await sql<{ namespace_id: string; session_id: string }>`
    select distinct r.namespace_id, r.session_id from runs r
    join sessions s on s.namespace_id = r.namespace_id and s.id = r.session_id
    where r.hosted and r.status = 'pending'
      and not exists (select 1 from attempts a
                      where a.agent_id = s.parent_agent_id and a.status <> 'terminal')
    limit ${limit}
  `.execute(db)
  return result.rows.map((r) => ({ namespaceId: r.namespace_id, sessionId: r.session_id }))
}

/** A run with, for a hosted run that completed, its parent's answer (the attempt's preview). */
export async function getRunWithOutput(
  db: Db,
  namespaceId: string,
  runId: string,
): Promise<
  { readonly run: RunRecord; readonly hosted: boolean; readonly output: string | null } | undefined
> {
  const row = await db
    .selectFrom('runs')
    .leftJoin('attempts', 'attempts.id', 'runs.id')
    .selectAll('runs')
    .select(['attempts.output_preview', 'attempts.stop_reason'])
    .where('runs.id', '=', runId)
    .where('runs.namespace_id', '=', namespaceId)
    .executeTakeFirst()
  if (row === undefined) return undefined
  return {
    run: toRunRecord(row),
    hosted: row.hosted,
    output: row.hosted && row.stop_reason === 'completed' ? row.output_preview : null,
  }
}

/**
 * What a session's delegations count against its profile's budgets, in one statement: the
 * session's profile (null for a host-managed session; absent for no session), the children
 * `runId` delegated (0 without one), the session's children not finished, the tokens its
 * finished children spent (each attempt's own, stored once by the commit that made it terminal),
 * and the depth a child of `parentAttemptId` would have (1 without one, or when it is not an
 * attempt of the session: the accept refuses that). A child is any attempt of the session but
 * its parent agent's own (the hosted runs), delegated by the parent's tool or over HTTP, with a
 * parent run, a parent attempt or neither.
 */
export async function sessionBudgetUse(
  db: Db,
  input: {
    readonly namespaceId: string
    readonly sessionId: string
    readonly runId?: string | undefined
    readonly parentAttemptId?: string | undefined
  },
): Promise<
  | {
      readonly profile: string | null
      readonly ofRun: number
      readonly running: number
      readonly childTokens: number
      readonly depth: number
    }
  | undefined
> {
  const result = await sql<{
    profile: string | null
    of_run: number
    running: number
    child_tokens: string
    depth: number
  }>`
    select s.profile, c.of_run, c.running, c.child_tokens,
           coalesce((select coalesce(p.depth, 1) from attempts p
                     where p.namespace_id = s.namespace_id and p.session_id = s.id
                       and p.id = ${input.parentAttemptId ?? null}::uuid), 0) + 1 as depth
    from sessions s cross join lateral (
      select count(*) filter (where a.parent_run_id = ${input.runId ?? null}::uuid)::int as of_run,
             count(*) filter (where a.status <> 'terminal')::int as running,
             coalesce(sum(a.usage_tokens) filter (where a.status = 'terminal'), 0)::bigint
               as child_tokens
      from attempts a
      where a.namespace_id = s.namespace_id and a.session_id = s.id
        and a.agent_id is distinct from s.parent_agent_id
    ) c
    where s.namespace_id = ${input.namespaceId} and s.id = ${input.sessionId}
  `.execute(db)
  const row = result.rows[0]
  if (row === undefined) return undefined
  return {
    profile: row.profile,
    ofRun: row.of_run,
    running: row.running,
    depth: row.depth,
    childTokens: Number(row.child_tokens),
  }
}
