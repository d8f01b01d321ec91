import { sql, type RawBuilder } from 'kysely'
import type { Db } from '../db.ts'

/**
 * Where the next retention batch of each namespace starts: the terminal time (agents) or end time
 * (runs), and the id, of the last row the previous batch looked at. A namespace without one
 * starts from its oldest row. Kept by the caller between batches, so rows that must stay (an agent
 * still in use, an artifact kept longer) never hold back the rows behind them.
 */
export type RetentionCursor = ReadonlyMap<string, { readonly at: string; readonly id: string }>

/**
 * The transaction-scoped advisory lock each batch statement tries first, so that one batch runs at
 * a time in the whole fleet: workers' lanes would otherwise read the same oldest candidates, skip
 * each other's locked rows and multiply the load a drain puts beside claims for no more removed.
 */
export const RETENTION_LOCK_KEY = 0x626174_6f6e2d72n

export interface RetentionBatch {
  /**
   * Another worker's batch held the retention lock: this one read and removed nothing, and its
   * cursors are empty. The lane leaves the backlog to that worker until its next pass.
   */
  readonly busy: boolean
  /** Attempts removed, with their transitions, steering, agent history and continuation. */
  readonly attempts: number
  /** Agents removed: every attempt of each was terminal and older than the retention. */
  readonly agents: number
  /** Ended host runs removed. */
  readonly runs: number
  /** The cursors for the next batch; a namespace whose batch reached its end is absent. */
  readonly agentCursor: RetentionCursor
  readonly runCursor: RetentionCursor
}

/**
 * One retention batch over the ledger's history, in two statements (agents, then runs), each
 * reading at most `limit` candidates per namespace, oldest first from the cursor, through the
 * indexes of migration 0050.
 *
 * Inputs: the default retention (a namespace's own `ledger_retention_ms` wins), the batch size, the
 * cursor of the previous batch.
 * - An agent goes with its whole history when every one of its attempts is terminal and ended
 *   before the retention (an agent still in use keeps all of it: its history is one sequence), no
 *   continuation of them is open, no artifact of them still holds content (artifact retention
 *   frees it first), and the continuation run each one caused, if any, has ended and is named by
 *   nothing that stays. Removed with it: its attempts, their transitions, steering messages,
 *   continuations, expired artifacts and caused runs, and its agent history.
 * - A host run (`user`, `explicit`) goes once it ended before the retention and nothing names it.
 *
 * Never blocks a claim: claims and renewals lock accepted and running attempts, which a batch never
 * reads; the rows it removes are taken `for update skip locked`, so a row another transaction
 * holds is left for a later batch. One batch runs at a time in the fleet: each statement first
 * tries the retention lock, and one that finds it taken reads nothing (`busy`). Outcome: what was
 * removed, and the next cursor. Retry safety:
 * a repeat removes only what is still due.
 */
export async function removeExpiredHistory(
  db: Db,
  input: {
    readonly defaultRetentionMs: number
    readonly limit: number
    readonly agentCursor?: RetentionCursor
    readonly runCursor?: RetentionCursor
  },
): Promise<RetentionBatch> {
  const agents = await removeAgents(db, input.defaultRetentionMs, input.limit, input.agentCursor)
  if (!agents.held) return { busy: true, attempts: 0, agents: 0, runs: 0, ...noCursors() }
  const runs = await removeRuns(db, input.defaultRetentionMs, input.limit, input.runCursor)
  return {
    busy: false,
    attempts: agents.attempts,
    agents: agents.agents,
    runs: runs.runs,
    agentCursor: agents.cursor,
    runCursor: runs.cursor,
  }
}

const noCursors = () => ({ agentCursor: new Map(), runCursor: new Map() })

/** Whether this transaction holds the retention lock (`RETENTION_LOCK_KEY`), tried once. */
const gate = sql`select pg_try_advisory_xact_lock(${sql.lit(RETENTION_LOCK_KEY.toString())}::bigint) as held`

/**
 * Each namespace, its cutoff on the database clock, and where its batch starts; none unless the
 * statement's `gate` holds the retention lock.
 */
function namespaceCutoffs(defaultRetentionMs: number, cursor: RetentionCursor | undefined) {
  const namespaces = [...(cursor?.keys() ?? [])]
  const at = namespaces.map((n) => cursor?.get(n)?.at ?? null)
  const id = namespaces.map((n) => cursor?.get(n)?.id ?? null)
  return sql`
    select n.id, now() - coalesce(n.ledger_retention_ms, ${defaultRetentionMs}) * interval '1 millisecond' as cutoff,
           coalesce(c.at, '-infinity') as after_at,
           coalesce(c.id, '00000000-0000-0000-0000-000000000000') as after_id
    from namespaces n
    join gate on gate.held
    left join unnest(${namespaces}::text[], ${at}::timestamptz[], ${id}::uuid[]) as c(ns, at, id)
      on c.ns = n.id
  `
}

/** Per namespace, the last candidate a batch looked at (by `at`, then id) and how many it did. */
function lastScanned(at: RawBuilder<unknown>) {
  return sql`
    select distinct on (namespace_id) namespace_id, ${at}::text as at, id::text as id,
           count(*) over (partition by namespace_id)::int as n
    from candidates order by namespace_id, ${at} desc, id desc
  `
}

/**
 * The batch size, written into the statement rather than bound: a connection's generic plan
 * cannot know a bound limit and plans for a tenth of the table, which turns an agent's few
 * candidates into a scan of every agent.
 */
export function batchSize(limit: number): number {
  if (!Number.isInteger(limit) || limit < 1) throw new Error(`batch size ${limit} is not whole`)
  return limit
}

type Scanned = { namespace_id: string; at: string; id: string; n: number }

/** Namespaces whose batch was full go on from their last row; the others start over. */
function nextCursor(rows: readonly Scanned[] | null | undefined, limit: number) {
  const cursor = new Map<string, { at: string; id: string }>()
  for (const row of rows ?? [])
    if (row.n >= limit) cursor.set(row.namespace_id, { at: row.at, id: row.id })
  return cursor
}

async function removeAgents(
  db: Db,
  defaultRetentionMs: number,
  limit: number,
  cursor: RetentionCursor | undefined,
) {
  const { rows } = await sql<{
    held: boolean
    scanned: Scanned[] | null
    attempts: number
    agents: number
  }>`
    with gate as materialized (${gate}),
    ns as materialized (${namespaceCutoffs(defaultRetentionMs, cursor)}),
    candidates as materialized (
      select ns.id as namespace_id, ns.cutoff, a.agent_id, a.terminal_at, a.id
      from ns cross join lateral (
        select id, agent_id, terminal_at from attempts
        where namespace_id = ns.id and terminal_at is not null
          and (terminal_at, id) > (ns.after_at, ns.after_id) and terminal_at < ns.cutoff
        order by terminal_at, id limit ${sql.lit(batchSize(limit))}
      ) a
    ),
    scanned as (${lastScanned(sql.ref('terminal_at'))}),
    due as (select distinct agent_id, cutoff from candidates),
    doomed_agents as materialized (
      select ag.id from agents ag join due on due.agent_id = ag.id
      -- A hosted session's parent agent holds the session's conversation: kept with the session.
      where not exists (
        select 1 from sessions s
        where s.namespace_id = ag.namespace_id and s.id = ag.session_id and s.parent_agent_id = ag.id
      )
      and not exists (
        select 1 from attempts b
        left join continuations c on c.attempt_id = b.id
        left join artifacts f on f.id = b.artifact_id
        where b.agent_id = ag.id
          and (b.terminal_at is null or b.terminal_at >= due.cutoff
               or c.state in ('held', 'pending', 'claimed')
               or f.expired_at is null and f.id is not null
               or exists (
                 select 1 from runs r where r.cause_attempt_id = b.id
                 and (r.settled_at is null
                      or exists (select 1 from attempts x where x.parent_run_id = r.id)
                      or exists (select 1 from continuations y where y.parent_run_id = r.id)
                      or exists (select 1 from continuations y
                                 where y.consumer_run_id = r.id and y.attempt_id <> b.id)
                      or exists (select 1 from continuations y where y.suppression_run_id = r.id))))
      )
      for update of ag skip locked
    ),
    doomed as materialized (
      select id from attempts where agent_id in (select id from doomed_agents)
    ),
    events as (delete from agent_context_events where agent_id in (select id from doomed_agents)),
    transitions as (delete from attempt_transitions where attempt_id in (select id from doomed)),
    messages as (delete from attempt_messages where attempt_id in (select id from doomed)),
    pushed as (delete from webhook_deliveries where attempt_id in (select id from doomed)),
    continued as (delete from continuations where attempt_id in (select id from doomed)),
    caused as (delete from runs where cause_attempt_id in (select id from doomed)),
    artifacts_gone as (delete from artifacts where attempt_id in (select id from doomed)),
    attempts_gone as (delete from attempts where id in (select id from doomed) returning id),
    agents_gone as (delete from agents where id in (select id from doomed_agents) returning id)
    select (select held from gate) as held,
           (select json_agg(s) from scanned s) as scanned,
           (select count(*)::int from attempts_gone) as attempts,
           (select count(*)::int from agents_gone) as agents
  `.execute(db)
  const row = rows[0]
  return {
    held: row?.held === true,
    attempts: row?.attempts ?? 0,
    agents: row?.agents ?? 0,
    cursor: nextCursor(row?.scanned, limit),
  }
}

async function removeRuns(
  db: Db,
  defaultRetentionMs: number,
  limit: number,
  cursor: RetentionCursor | undefined,
) {
  const { rows } = await sql<{
    scanned: Scanned[] | null
    runs: number
  }>`
    with gate as materialized (${gate}),
    ns as materialized (${namespaceCutoffs(defaultRetentionMs, cursor)}),
    candidates as materialized (
      select ns.id as namespace_id, r.id, r.settled_at
      from ns cross join lateral (
        select id, settled_at from runs
        where namespace_id = ns.id and settled_at is not null and cause_attempt_id is null
          and not hosted
          and (settled_at, id) > (ns.after_at, ns.after_id) and settled_at < ns.cutoff
        order by settled_at, id limit ${sql.lit(batchSize(limit))}
      ) r
    ),
    scanned as (${lastScanned(sql.ref('settled_at'))}),
    doomed as (
      select r.id from runs r where r.id in (select id from candidates)
        and not exists (select 1 from attempts x where x.parent_run_id = r.id)
        and not exists (select 1 from continuations y where y.parent_run_id = r.id)
        and not exists (select 1 from continuations y where y.consumer_run_id = r.id)
        and not exists (select 1 from continuations y where y.suppression_run_id = r.id)
      for update skip locked
    ),
    runs_gone as (delete from runs where id in (select id from doomed) returning id)
    select (select json_agg(s) from scanned s) as scanned,
           (select count(*)::int from runs_gone) as runs
  `.execute(db)
  const row = rows[0]
  return { runs: row?.runs ?? 0, cursor: nextCursor(row?.scanned, limit) }
}
