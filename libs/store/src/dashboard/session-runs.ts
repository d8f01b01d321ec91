import { sql } from 'kysely'
import type { Db } from '../db.ts'
import { TRANSIENT_READ_RETRY, retryTransient } from '../pg-errors.ts'
import { batchSize } from '../retention/remove-expired-history.ts'

export interface SessionRunChild {
  readonly attemptId: string
  readonly agentId: string
  readonly name: string
  readonly status: 'accepted' | 'running' | 'terminal'
  readonly stopReason: string | null
  readonly failureCategory: string | null
  readonly acceptedAt: Date
  readonly terminalAt: Date | null
}

export interface SessionRun {
  readonly runId: string
  readonly triggerType: 'user' | 'async_subagent_result' | 'explicit'
  readonly status: 'pending' | 'active' | 'completed' | 'failed' | 'cancelled'
  readonly hosted: boolean
  /** A continuation run's cause: the child attempt whose result it carries (gone: name null). */
  readonly cause: {
    readonly attemptId: string
    readonly agentId: string | null
    readonly name: string | null
  } | null
  readonly createdAt: Date
  readonly startedAt: Date | null
  readonly endedAt: Date | null
  readonly children: readonly SessionRunChild[]
  readonly childrenTruncated: boolean
}

export interface SessionRunsRecord {
  readonly now: Date
  readonly session: {
    readonly namespaceId: string
    readonly sessionId: string
    readonly profile: string | null
    readonly parentAgentId: string | null
    readonly createdAt: Date
    readonly deletedAt: Date | null
  }
  /** In admission order: the session's last `runs` runs. */
  readonly runs: readonly SessionRun[]
  /** Whether the session has runs before those. */
  readonly earlierRuns: boolean
}

interface Row {
  now: Date
  namespace_id: string
  session_id: string
  profile: string | null
  parent_agent_id: string | null
  session_created_at: Date
  deleted_at: Date | null
  run_id: string | null
  trigger_type: SessionRun['triggerType']
  run_status: SessionRun['status']
  hosted: boolean
  cause_attempt_id: string | null
  cause_agent_id: string | null
  cause_name: string | null
  run_created_at: Date
  run_started_at: Date | null
  settled_at: Date | null
  child_id: string | null
  child_agent_id: string
  child_name: string
  child_status: SessionRunChild['status']
  stop_reason: string | null
  failure_category: string | null
  child_created_at: Date
  terminal_at: Date | null
}

/**
 * One session of a namespace with its last `runs` runs in admission order, each with the first
 * `children` children it delegated (the attempts naming it as their parent run), in one
 * statement: the session by primary key, its runs through `runs_session_idx`, a hosted run's own
 * attempt (its start) and a continuation's cause by primary key, and each run's children through
 * `attempts_parent_run_idx`. `undefined` when there is no such session.
 */
export async function getSessionRuns(
  db: Db,
  namespaceId: string,
  sessionId: string,
  input: { readonly runs: number; readonly children: number },
): Promise<SessionRunsRecord | undefined> {
  // One more than shown, to tell whether there are more; written into the statement (see above).
  const runs = sql.lit(batchSize(input.runs) + 1)
  const children = sql.lit(batchSize(input.children) + 1)
  const result = await retryTransient(
    () =>
      sql<Row>`
        select now() as now, s.namespace_id, s.id as session_id, s.profile, s.parent_agent_id,
               s.created_at as session_created_at, s.deleted_at,
               r.id as run_id, r.trigger_type, r.status as run_status, r.hosted,
               r.cause_attempt_id, cause.agent_id as cause_agent_id, cause.name as cause_name,
               r.created_at as run_created_at,
               case when r.hosted then own.started_at else r.created_at end as run_started_at,
               r.settled_at,
               c.id as child_id, c.agent_id as child_agent_id, c.name as child_name,
               c.status as child_status, c.stop_reason, c.failure_category,
               c.created_at as child_created_at, c.terminal_at
        from sessions s
        left join lateral (
          select id, trigger_type, status, hosted, cause_attempt_id, created_at, settled_at,
                 admission_seq
          from runs where namespace_id = s.namespace_id and session_id = s.id
          order by admission_seq desc limit ${runs}
        ) r on true
        left join attempts own on r.hosted and own.id = r.id
        left join attempts cause on cause.id = r.cause_attempt_id
        left join lateral (
          select id, agent_id, name, status, stop_reason, failure_category, created_at, terminal_at
          from attempts where parent_run_id = r.id
          order by created_at, id limit ${children}
        ) c on true
        where s.namespace_id = ${namespaceId} and s.id = ${sessionId}
        order by r.admission_seq, c.created_at, c.id
      `.execute(db),
    TRANSIENT_READ_RETRY,
  )
  const first = result.rows[0]
  if (first === undefined) return undefined
  const byRun = new Map<string, { run: Row; children: Row[] }>()
  for (const row of result.rows) {
    if (row.run_id === null) continue
    const entry = byRun.get(row.run_id) ?? { run: row, children: [] }
    byRun.set(row.run_id, entry)
    if (row.child_id !== null) entry.children.push(row)
  }
  const all = [...byRun.values()]
  // The extra run read is the oldest (runs are read newest first): there are earlier ones.
  const shown = all.length > input.runs ? all.slice(all.length - input.runs) : all
  return {
    now: first.now,
    session: {
      namespaceId: first.namespace_id,
      sessionId: first.session_id,
      profile: first.profile,
      parentAgentId: first.parent_agent_id,
      createdAt: first.session_created_at,
      deletedAt: first.deleted_at,
    },
    runs: shown.map(({ run, children: rows }) => ({
      runId: run.run_id ?? '',
      triggerType: run.trigger_type,
      status: run.run_status,
      hosted: run.hosted,
      cause:
        run.cause_attempt_id === null
          ? null
          : { attemptId: run.cause_attempt_id, agentId: run.cause_agent_id, name: run.cause_name },
      createdAt: run.run_created_at,
      startedAt: run.run_started_at,
      endedAt: run.settled_at,
      children: rows.slice(0, input.children).map((c) => ({
        attemptId: c.child_id ?? '',
        agentId: c.child_agent_id,
        name: c.child_name,
        status: c.child_status,
        stopReason: c.stop_reason,
        failureCategory: c.failure_category,
        acceptedAt: c.child_created_at,
        terminalAt: c.terminal_at,
      })),
      childrenTruncated: rows.length > input.children,
    })),
    earlierRuns: all.length > input.runs,
  }
}
