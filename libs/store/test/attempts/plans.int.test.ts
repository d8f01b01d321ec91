import { randomUUID } from 'node:crypto'
import { sql, type RawBuilder } from 'kysely'
import pg from 'pg'
import { describe, expect, test } from '@baton/testing'
import { createDb, type Db } from '../../src/db.ts'
import { readAttemptActivity } from '../../src/dashboard/attempt-activity.ts'
import { acceptDelegations } from '../../src/attempts/accept-delegations.ts'
import { acceptWithinBudgets } from '../../src/attempts/accept-within-budgets.ts'
import { claimAttempt, claimAttempts } from '../../src/attempts/claim-attempt.ts'
import { commitTerminal, commitTerminals } from '../../src/attempts/commit-terminal.ts'
import { getAttempts } from '../../src/attempts/get-attempt.ts'
import { renewLeases } from '../../src/attempts/renew-leases.ts'
import { requestCancels } from '../../src/attempts/request-cancel.ts'
import { findStaleAccepted } from '../../src/attempts/find-stale-accepted.ts'
import { findExpiredRunning } from '../../src/attempts/reconcile-process-loss.ts'
import { countAttemptStates } from '../../src/dashboard/count-attempt-states.ts'
import { listActiveSessions } from '../../src/dashboard/list-active-sessions.ts'
import { getSessionRuns } from '../../src/dashboard/session-runs.ts'
import { listLiveLeases } from '../../src/dashboard/list-live-leases.ts'
import { countRetentionDue } from '../../src/retention/count-retention-due.ts'
import { removeExpiredHistory } from '../../src/retention/remove-expired-history.ts'
import { claimContinuation } from '../../src/continuations/claim-continuation.ts'
import { countContinuations } from '../../src/continuations/count-continuations.ts'
import { reconcileDeliveries } from '../../src/continuations/reconcile-deliveries.ts'
import { takeWebhookDeliveries } from '../../src/webhooks/webhook-deliveries.ts'
import { requestCancel } from '../../src/attempts/request-cancel.ts'
import {
  findUndeliveredSteering,
  markSteeringDelivered,
  recordSteering,
} from '../../src/attempts/steering.ts'
import { listRecentTerminals } from '../../src/dashboard/list-recent-terminals.ts'
import { idleHostedSessions } from '../../src/runs/hosted-runs.ts'
import { abandonExpiredRuns } from '../../src/runs/abandon-runs.ts'
import { expireArtifacts } from '../../src/artifacts/expire-artifacts.ts'
import { namespaceArtifactBytes } from '../../src/artifacts/namespace-artifact-bytes.ts'
import { accept, done, scriptedDelegation } from '../support/attempts.ts'
import {
  NS,
  delegateFrom,
  finish,
  pendingContinuation,
  sessionWithRun,
} from '../support/continuations.ts'

/**
 * How Postgres planned the statements prepared on this one-connection pool whose text contains
 * `marker`: a hot statement that gets a custom plan on every run pays its planning every time.
 */
async function plans(db: Db, marker: string): Promise<{ generic: number; custom: number }> {
  const { rows } = await sql<{ generic: string; custom: string }>`
    select coalesce(sum(generic_plans), 0) as generic, coalesce(sum(custom_plans), 0) as custom
    from pg_prepared_statements where strpos(statement, ${marker}) > 0`.execute(db)
  const [row] = rows
  return { generic: Number(row?.generic), custom: Number(row?.custom) }
}

/** Postgres tries five custom plans before it compares them with the generic one. */
const SETTLED = { generic: 7, custom: 5 }

describe('hot ledger statements keep one generic plan', () => {
  test('a read of one attempt', async ({ db, databaseUrl }) => {
    const { attemptId } = await accept(db)
    const reader = createDb({ connectionString: databaseUrl, maxConnections: 1 })
    try {
      for (let i = 0; i < 12; i++) {
        expect((await getAttempts(reader, [attemptId])).get(attemptId)?.id).toBe(attemptId)
      }
      expect(await plans(reader, 'steer_sequence')).toEqual(SETTLED)
    } finally {
      await reader.destroy()
    }
  })

  test('the accept of one delegation', async ({ databaseUrl }) => {
    const api = createDb({ connectionString: databaseUrl, maxConnections: 1 })
    try {
      for (let i = 0; i < 12; i++) {
        const input = scriptedDelegation(`plans-${i}`)
        const [outcome] = await acceptDelegations(api, [input])
        expect(outcome).toMatchObject({ kind: 'accepted', attemptId: input.attemptId })
      }
      expect(await plans(api, 'insert into attempts')).toEqual(SETTLED)
    } finally {
      await api.destroy()
    }
  })

  test("a worker's claim and commit of one attempt, on a fresh ledger and on a settled one", async ({
    db,
    databaseUrl,
  }) => {
    // Fresh: never analysed, as a new deployment's first minute.
    const fresh = await oneByOne(db, databaseUrl)
    // Settled: thousands of finished attempts, few queued or running, analysed.
    await finishedAttempts(db, 2_000)
    await sql`analyze attempts`.execute(db)
    const settled = await oneByOne(db, databaseUrl)
    for (const { claim, commit } of [fresh, settled]) {
      expect(claim.plans).toEqual(SETTLED)
      expect(claim.generic).toContain('attempts_pkey')
      expect(claim.generic).not.toContain('attempts_accepted_idx')
      expect(commit.plans).toEqual(SETTLED)
      expect(commit.generic).toContain('attempts_pkey')
      // A scan of every running attempt per commit: what the statistics of few running make cheap.
      expect(commit.generic).not.toContain('attempts_running_idx')
    }
  })
})

describe("a worker's renewal costs what its leases cost, whatever plan it keeps", () => {
  test('under the generic plan, no part of the renewal is read once per lease', async ({
    db,
    databaseUrl,
  }) => {
    // A history behind them, so that reading every attempt would cost what the history costs.
    await finishedAttempts(db, 3_000)
    const leases = await runningAttempts(db, 300)
    // The plan a worker's connection keeps after its first renewals: the generic one, which
    // cannot know how many leases the array holds.
    const plan = await explainRenewal(databaseUrl, leases, 'force_generic_plan')
    // Every read of a held lease, an owned row or a renewed one happens once per statement or
    // through an index: a CTE read once per lease is a loop over every pair.
    const cteLoops = [...plan.matchAll(/CTE Scan on \w+.*loops=(\d+)/g)].map((m) => Number(m[1]))
    expect(cteLoops.length).toBeGreaterThan(0)
    expect(cteLoops.every((loops) => loops === 1)).toBe(true)
    // Each held lease through the primary key or the running attempts' index, never the history.
    expect(plan).not.toMatch(/Seq Scan on attempts/)
  })

  test.for(['force_custom_plan', 'force_generic_plan'] as const)(
    'with statistics taken before the children started (%s), each held lease is read once, through the primary key',
    async (mode, { db, databaseUrl }) => {
      // A history behind them (the suites of this file share one database: written once).
      const { rows: history } = await sql<{ n: number }>`
        select count(*)::int as n from attempts where status = 'terminal'`.execute(db)
      if ((history[0]?.n ?? 0) < 3_000) await finishedAttempts(db, 3_000)
      const leases = await runningAttempts(db, 1_000, { staleStatistics: true })
      const plan = await explainRenewal(databaseUrl, leases, mode)
      // The suites of this file share one database: the next one plans without these children
      // and with fresh statistics.
      const ids = leases.map((l) => l.attemptId)
      const { rows: agents } = await sql<{ agent_id: string }>`
        delete from attempts where id = any(${ids}::uuid[]) returning agent_id`.execute(db)
      await sql`delete from agents where id = any(${agents.map((a) => a.agent_id)}::uuid[])`.execute(
        db,
      )
      await sql`analyze attempts`.execute(db)
      // The held leases are unnested once; each is read through the primary key and its row
      // locked there, once per lease; nothing is compared with every running attempt (what the
      // planner chose when it could start from the running attempts, whose index the stale
      // statistics say is nearly empty).
      const unnests = [...plan.matchAll(/Function Scan on \w+.*loops=(\d+)/g)]
      expect(unnests.length).toBeGreaterThan(0)
      expect(unnests.every((m) => m[1] === '1')).toBe(true)
      expect(plan).toMatch(
        /LockRows.*loops=1000\)\n\s*-> {2}(Index Scan using attempts_pkey on attempts|Bitmap Heap Scan on attempts[^\n]*loops=1000\)\n(.*\n){1,4}\s*-> {2}Bitmap Index Scan on attempts_pkey)/,
      )
      expect(plan).not.toMatch(/Rows Removed by (Join )?Filter/)
      expect(plan).not.toMatch(/attempts_running_idx/)
    },
  )

  test('a renewal updates its rows in place: no new index entry per lease and heartbeat', async ({
    db,
  }) => {
    const leases = await runningAttempts(db, 200)
    const updates = await db.transaction().execute(async (trx) => {
      // This backend's own counts of the table, not yet reported (no statistics delay).
      const counts = async () => {
        const { rows } = await sql<{ updated: string; hot: string }>`
          select pg_stat_get_xact_tuples_updated('attempts'::regclass) as updated,
                 pg_stat_get_xact_tuples_hot_updated('attempts'::regclass) as hot`.execute(trx)
        return { updated: Number(rows[0]?.updated), hot: Number(rows[0]?.hot) }
      }
      const before = await counts()
      await renewLeases(trx, { ownerId: 'w1', leases, leaseTtlMs: 30_000 })
      const after = await counts()
      return { updated: after.updated - before.updated, hot: after.hot - before.hot }
    })
    expect(updates.updated).toBe(200)
    // In place but for the few rows whose page had no room left (an index on what a renewal
    // writes would make none heap-only).
    expect(updates.hot).toBeGreaterThanOrEqual(180)
  })
})

describe("a cancel burst and a renewal's leftovers read the attempts they name, not the history", () => {
  test("the renewal's second read (only the leases it did not renew) and the cancel's read of queued attempts take each by primary key", async ({
    db,
    databaseUrl,
  }) => {
    await finishedAttempts(db, 3_000)
    const leases = await runningAttempts(db, 50)
    const queued = Array.from({ length: 20 }, () => scriptedDelegation('cancel-burst'))
    await acceptDelegations(db, queued)
    const pool = createDb({ connectionString: databaseUrl, maxConnections: 1 })
    try {
      await sql`set plan_cache_mode = force_generic_plan`.execute(pool)
      // One lease at a generation the ledger never gave: lost, so the second read runs.
      const stale = { attemptId: leases[0]?.attemptId ?? '', ownerGeneration: 7 }
      const renewals = await renewLeases(pool, {
        ownerId: 'w1',
        leases: [...leases.slice(1), stale],
        leaseTtlMs: 30_000,
      })
      expect(renewals.map((r) => r.status)).toEqual([
        ...leases.slice(1).map(() => 'renewed'),
        'lost',
      ])
      const cancels = await requestCancels(pool, [
        ...queued.map((q) => ({ attemptId: q.attemptId, reason: null })),
        ...leases.map((l) => ({ attemptId: l.attemptId, reason: null })),
      ])
      expect(new Set(cancels.map((c) => c.kind))).toEqual(
        new Set(['cancelled_queued', 'cancel_requested']),
      )
      for (const marker of ['as unrenewed(id, generation)', "metadata->>'traceId' as trace_id"]) {
        const { generic } = await cachedPlan(pool, marker)
        // Through the primary key, never a scan of every running or queued attempt.
        expect(generic).toMatch(/(Index (Only )?Scan using|Bitmap Index Scan on) attempts_pkey/)
        expect(generic).not.toMatch(/Seq Scan on attempts|attempts_(running|accepted)_idx/)
      }
    } finally {
      await pool.destroy()
    }
  })

  test("a terminal's webhook enqueue keeps its plan (PL/pgSQL) and finds the webhook by its scope index", async ({
    db,
    databaseUrl,
  }) => {
    // A language-sql function holding an insert is planned again on every call: once per row a
    // terminal commit makes terminal.
    const { rows: language } = await sql<{ lanname: string }>`
      select l.lanname from pg_proc p join pg_language l on l.oid = p.prolang
      where p.proname = 'baton_enqueue_webhook'`.execute(db)
    expect(language).toEqual([{ lanname: 'plpgsql' }])
    await sql`insert into webhooks (id, namespace_id, session_id, url, secret)
      select gen_random_uuid(), 'default', 'hooked-' || i, 'https://example.test/hook', 'secret'
      from generate_series(1, 500) i`.execute(db)
    await sql`analyze webhooks`.execute(db)
    const pool = createDb({ connectionString: databaseUrl, maxConnections: 1 })
    try {
      await sql`set plan_cache_mode = force_generic_plan`.execute(pool)
      // The function's statement, as PL/pgSQL plans it: its arguments are parameters.
      await sql`select w.id from webhooks w
        where w.namespace_id = ${'default'} and coalesce(w.session_id, '') in (${'hooked-7'}, '')
        order by w.session_id is null limit 1`.execute(pool)
      const { generic } = await cachedPlan(pool, 'order by w.session_id is null limit 1')
      expect(generic).toMatch(/webhooks_scope_key/)
      expect(generic).not.toMatch(/Seq Scan on webhooks/)
    } finally {
      await pool.destroy()
    }
  })
})

/**
 * `count` running attempts owned by `w1` at generation 1, written straight into the ledger. Statistics are taken after they are written, or with
 * `staleStatistics` before: as a busy ledger has them while children ramp faster than autovacuum
 * analyzes, when the planner believes almost nothing runs.
 */
async function runningAttempts(db: Db, count: number, { staleStatistics = false } = {}) {
  if (staleStatistics) await sql`analyze attempts`.execute(db)
  await sql`insert into sessions (namespace_id, id) values ('default', 'renewing')
    on conflict do nothing`.execute(db)
  const { rows } = await sql<{ id: string }>`
    with agents as (
      insert into agents (id, namespace_id, session_id, name)
      select gen_random_uuid(), 'default', 'renewing', 'scripted' from generate_series(1, ${count})
      returning id
    )
    insert into attempts (id, namespace_id, agent_id, session_id, name, prompt, status, owner_id,
                          owner_generation, lease_expires_at, started_at)
    select gen_random_uuid(), 'default', id, 'renewing', 'scripted', '"p"', 'running', 'w1', 1,
           now() + interval '30 seconds', now()
    from agents
    returning id`.execute(db)
  if (!staleStatistics) await sql`analyze attempts`.execute(db)
  return rows.map((r) => ({ attemptId: r.id, ownerGeneration: 1 }))
}

/**
 * The plan of a worker's renewal of `leases` under `mode`, executed (`explain analyze`) on the
 * statement its one-connection pool prepared, as a worker's connection runs it.
 */
async function explainRenewal(
  databaseUrl: string,
  leases: readonly { attemptId: string; ownerGeneration: number }[],
  mode: 'force_custom_plan' | 'force_generic_plan',
): Promise<string> {
  const worker = createDb({ connectionString: databaseUrl, maxConnections: 1 })
  try {
    await sql`${sql.raw(`set plan_cache_mode = ${mode}`)}`.execute(worker)
    const renewals = await renewLeases(worker, { ownerId: 'w1', leases, leaseTtlMs: 30_000 })
    expect(renewals.filter((r) => r.status === 'renewed')).toHaveLength(leases.length)
    const { rows } = await sql<{ name: string }>`
      select name from pg_prepared_statements
      where strpos(statement, 'with held as') > 0`.execute(worker)
    const name = rows[0]?.name
    if (name === undefined) throw new Error('the renewal was not prepared')
    const ids = `'{${leases.map((l) => l.attemptId).join(',')}}'`
    const generations = `'{${leases.map((l) => l.ownerGeneration).join(',')}}'`
    const explained = await sql<{ 'QUERY PLAN': string }>`${sql.raw(
      `explain (analyze, costs off) execute ${name}(${ids}, ${generations}, 'w1', 30000)`,
    )}`.execute(worker)
    return explained.rows.map((r) => r['QUERY PLAN']).join('\n')
  } finally {
    await worker.destroy()
  }
}

/**
 * Twelve attempts accepted, then claimed and committed one at a time by a worker's one-connection
 * pool: how Postgres planned the claim and the commit, and the plan it keeps for each.
 */
async function oneByOne(db: Db, databaseUrl: string) {
  const worker = createDb({ connectionString: databaseUrl, maxConnections: 1 })
  try {
    for (let i = 0; i < 12; i++) {
      const { attemptId } = await accept(db)
      const claim = await claimAttempt(worker, { attemptId, ownerId: 'w1', leaseTtlMs: 30_000 })
      if (claim.kind !== 'claimed') throw new Error(`claim was ${claim.kind}`)
      const outcome = await commitTerminal(worker, {
        attemptId,
        ownerId: 'w1',
        ownerGeneration: claim.attempt.ownerGeneration,
        result: done,
      })
      expect(outcome).toBe('committed')
    }
    return {
      claim: await cachedPlan(worker, "set status = 'running'"),
      commit: await cachedPlan(worker, "'committed', owner_id"),
    }
  } finally {
    await worker.destroy()
  }
}

/**
 * How Postgres planned the one statement prepared on `pool` whose text contains `marker`, and the
 * plan it keeps for it (`explain execute`, which shows the cached plan without running it).
 */
async function cachedPlan(pool: Db, marker: string) {
  const planned = await plans(pool, marker)
  const { rows } = await sql<{ name: string; types: string[] }>`
    select name, parameter_types::text[] as types from pg_prepared_statements
    where strpos(statement, ${marker}) > 0`.execute(pool)
  const [statement, other] = rows
  if (statement === undefined || other !== undefined) {
    throw new Error(`expected one prepared statement containing ${marker}, found ${rows.length}`)
  }
  // Any values of the declared types will do: the plan is not run.
  const values = statement.types.map((t) => {
    const base = t.replace(/\[\]$/, '')
    const value = base === 'uuid' ? randomUUID() : base === 'text' ? 'w1' : '1'
    return base === t ? `'${value}'` : `'{${value}}'`
  })
  const explained = await sql<{ 'QUERY PLAN': string }>`${sql.raw(
    `explain execute ${statement.name}(${values.join(', ')})`,
  )}`.execute(pool)
  return { plans: planned, generic: explained.rows.map((r) => r['QUERY PLAN']).join('\n') }
}

/** `count` attempts accepted, claimed and committed, a few hundred per statement. */
async function finishedAttempts(db: Db, count: number): Promise<void> {
  for (let made = 0; made < count; made += 500) {
    const inputs = Array.from({ length: Math.min(500, count - made) }, (_, i) =>
      scriptedDelegation(`finished-${made + i}`),
    )
    await acceptDelegations(db, inputs)
    const ids = inputs.map((input) => input.attemptId)
    const claims = await claimAttempts(db, { ownerId: 'w0', leaseTtlMs: 30_000, attemptIds: ids })
    await commitTerminals(
      db,
      claims.map((c, i) => {
        if (c.kind !== 'claimed') throw new Error(`claim was ${c.kind}`)
        return {
          attemptId: ids[i] as string,
          ownerId: 'w0',
          ownerGeneration: c.attempt.ownerGeneration,
          result: done,
        }
      }),
    )
  }
}

describe('the dashboard reads the last hour by time, not by history', () => {
  test("the per-minute activity finds the hour's terminals through their index", async ({
    db,
    databaseUrl,
  }) => {
    // A long history behind the window: thousands of attempts finished days ago, analysed.
    await finishedAttempts(db, 2_000)
    await sql`
      update attempts set created_at = created_at - interval '3 days',
                          started_at = started_at - interval '3 days',
                          terminal_at = terminal_at - interval '3 days'
      where status = 'terminal'`.execute(db)
    await sql`analyze attempts`.execute(db)
    let text = ''
    const reader = createDb({
      connectionString: databaseUrl,
      maxConnections: 1,
      onQuery: (statement) => {
        text = statement
      },
    })
    try {
      await readAttemptActivity(reader, { minutes: 60 })
    } finally {
      await reader.destroy()
    }
    expect(text).toContain('with bounds as')
    const explained = await sql<{ 'QUERY PLAN': string }>`explain ${sql.raw(text)}`.execute(db)
    const plan = explained.rows.map((r) => r['QUERY PLAN']).join('\n')
    expect(plan).toContain('attempts_terminal_at_idx')
    expect(plan).toMatch(/Index Cond: \(terminal_at >= /)
    // Queued and running attempts through their partial indexes; no attempt read by a scan.
    expect(plan).not.toMatch(/Seq Scan on attempts/)
  })
})

describe('continuation statements read indexes, not the delivered history', () => {
  test("a claim takes the session's next continuation through its indexes; the claim's release of lapsed claims, the sweep and the open-state count too", async ({
    db,
    databaseUrl,
  }) => {
    await deliveredHistory(db, { sessions: 200, perSession: 50 })
    const { parent, child } = await pendingContinuation(db)
    await sql`analyze continuations`.execute(db)
    await sql`analyze runs`.execute(db)
    const statements: string[] = []
    const pool = createDb({
      connectionString: databaseUrl,
      maxConnections: 1,
      onQuery: (text) => statements.push(text),
    })
    try {
      // The plan a hot statement keeps: the generic one, whatever the values.
      await sql`set plan_cache_mode = force_generic_plan`.execute(pool)
      const claim = await claimContinuation(pool, {
        namespaceId: NS,
        sessionId: parent.sessionId,
        claimToken: 'planner',
        leaseMs: 60_000,
        releaseLapsed: true,
      })
      expect(claim?.attemptId).toBe(child.attemptId)
      const claimPlan = (await cachedPlan(pool, "set state = 'claimed'")).generic
      expect(claimPlan).toContain('continuations_pending_idx')
      expect(claimPlan).toContain('runs_pkey')
      expect(claimPlan).toContain('continuations_pkey')
      expect(claimPlan).not.toMatch(/Seq Scan on (continuations|runs)/)
      expect(claimPlan).not.toMatch(/Sort/)
      const lapsedPlan = (await cachedPlan(pool, "state = 'claimed' and claim_deadline <= now()"))
        .generic
      expect(lapsedPlan).toContain('continuations_session_claimed_idx')

      await reconcileDeliveries(pool, { due: true, limit: 500, unclaimedAfterMs: 3_600_000 })
      const sweepPlan = (await cachedPlan(pool, 'order by min(due_at)')).generic
      // Claims from an index of claims (by deadline), pending ones from their own; never the table.
      expect(sweepPlan).toMatch(/Scan using continuations_(claim_deadline|session_claimed)_idx/)
      expect(sweepPlan).toContain('continuations_unclaimed_idx')
      expect(sweepPlan).not.toMatch(/Seq Scan on continuations/)

      await countContinuations(pool)
      const count = statements.find((s) =>
        s.includes("where state in ('held', 'pending', 'claimed')"),
      )
      if (count === undefined) throw new Error('the open-state count ran no statement')
      const countPlan = await sql<{ 'QUERY PLAN': string }>`explain ${sql.raw(count)}`.execute(pool)
      expect(countPlan.rows.map((r) => r['QUERY PLAN']).join('\n')).toMatch(
        /Index Only Scan using continuations_open_state_idx/,
      )
    } finally {
      await pool.destroy()
    }
  })
})

describe("a terminal commit's continuation admission reads indexes, not the delivered history", () => {
  test('every statement of the admission function (as Postgres runs it inside the commit) reads through an index', async ({
    db,
    databaseUrl,
  }) => {
    await deliveredHistory(db, { sessions: 200, perSession: 50 })
    // Sessions enough that reading one by its key is cheaper through the index than the table.
    await sql`insert into sessions (namespace_id, id)
      select 'default', 'admission-idle-' || i from generate_series(1, 20000) i
      on conflict do nothing`.execute(db)
    // Two results to admit: one whose parent run ended (a pending continuation and its run), one
    // whose parent run is active (held for it). Admitted by their commits; the rows are removed
    // so that the function runs its whole path again below.
    const pending = await pendingContinuation(db)
    const active = await sessionWithRun(db)
    const held = await delegateFrom(db, active)
    await finish(db, held)
    const admitted = [pending.child.attemptId, held.attemptId]
    await sql`delete from continuations where attempt_id = any(${admitted}::uuid[])`.execute(db)
    await sql`delete from runs where cause_attempt_id = ${pending.child.attemptId}::uuid`.execute(
      db,
    )
    for (const table of ['attempts', 'continuations', 'runs', 'sessions'])
      await sql`analyze ${sql.table(table)}`.execute(db)

    // auto_explain reports the plan of each statement the function runs, to this client.
    const client = new pg.Client({ connectionString: databaseUrl })
    const plans: string[] = []
    client.on('notice', (notice) => {
      if (notice.message?.includes('Query Text')) plans.push(notice.message)
    })
    await client.connect()
    try {
      await client.query(`load 'auto_explain'`)
      await client.query(`set auto_explain.log_min_duration = 0`)
      await client.query(`set auto_explain.log_nested_statements = on`)
      await client.query(`set auto_explain.log_level = notice`)
      // The plan a function's statement keeps after its first calls: the generic one.
      await client.query(`set plan_cache_mode = force_generic_plan`)
      const { rows } = await client.query<{ receipt: string | null }>(
        `select baton_admit_continuation(id) as receipt from unnest($1::uuid[]) as x(id)`,
        [admitted],
      )
      expect(rows.every((r) => typeof r.receipt === 'string')).toBe(true)
    } finally {
      await client.end()
    }
    const nested = plans.filter((plan) => !plan.includes('unnest($1::uuid[])'))
    // Its lookups, the durable input's derivation, the disposition and its inserts, twice.
    expect(nested.length).toBeGreaterThanOrEqual(10)
    for (const plan of nested)
      expect(plan).not.toMatch(
        /Seq Scan on (attempts|continuations|runs|sessions|agents|agent_context_events|artifacts)\b/,
      )
    expect(nested.join('\n')).toMatch(/Index Scan using continuations_pkey on continuations/)
    expect(nested.join('\n')).toMatch(/Index Scan using attempts_pkey on attempts/)
  })
})

describe('webhook statements read indexes, not the delivered history', () => {
  test("a worker's take of due deliveries reads the due index, whatever the delivered history", async ({
    db,
    databaseUrl,
  }) => {
    await deliveredHistory(db, { sessions: 200, perSession: 50 })
    // Every history attempt has a delivered event; one more event is due.
    await sql`
      insert into webhook_deliveries (id, namespace_id, session_id, event_type, attempt_id, state,
                                      tries, next_try_at, delivered_at)
      select 'msg_attempt_terminal_' || replace(attempt_id::text, '-', ''), namespace_id,
             session_id, 'attempt.terminal', attempt_id, 'delivered', 1, null, now()
      from continuations
    `.execute(db)
    await sql`
      insert into webhook_deliveries (id, namespace_id, session_id, event_type, attempt_id)
      select 'msg_continuation_due', namespace_id, session_id, 'continuation.admitted', attempt_id
      from continuations limit 1
    `.execute(db)
    await sql`analyze webhook_deliveries`.execute(db)
    const pool = createDb({ connectionString: databaseUrl, maxConnections: 1 })
    try {
      await sql`set plan_cache_mode = force_generic_plan`.execute(pool)
      const taken = await takeWebhookDeliveries(pool, {
        ownerId: 'planner',
        leaseMs: 60_000,
        limit: 16,
        maxAgeMs: 86_400_000,
      })
      expect(taken.map((t) => t.id)).toEqual(['msg_continuation_due'])
      const plan = (await cachedPlan(pool, "set state = 'sending'")).generic
      expect(plan).toContain('webhook_deliveries_due_idx')
      expect(plan).not.toMatch(/Seq Scan on webhook_deliveries/)
    } finally {
      await pool.destroy()
    }
  })
})

/**
 * `perSession` delivered continuations in each of `sessions` sessions, written straight into the
 * tables (a long history, as the planner sees it; nothing here is ever claimed again).
 */
async function deliveredHistory(
  db: Db,
  size: { readonly sessions: number; readonly perSession: number },
): Promise<void> {
  const sessions = sql`generate_series(1, ${size.sessions}) s`
  const each = sql`generate_series(1, ${size.sessions}) s, generate_series(1, ${size.perSession}) i`
  const id = (prefix: string, ...parts: RawBuilder<unknown>[]) =>
    sql`md5(${prefix} || ${sql.join(parts, sql` || '-' || `)})::uuid`
  const [s, i] = [sql.ref('s'), sql.ref('i')]
  // The suites of this file share one database: the history is written once, by the first.
  const written = await sql`select 1 from sessions where id = 'history-1'`.execute(db)
  if (written.rows.length > 0) return
  await sql`
    insert into sessions (namespace_id, id) select 'default', 'history-' || s from ${sessions}
  `.execute(db)
  await sql`
    insert into agents (id, namespace_id, session_id, name)
    select ${id('agent', s)}, 'default', 'history-' || s, 'x' from ${sessions}
  `.execute(db)
  await sql`
    insert into runs (id, namespace_id, session_id, trigger_type, status, settled_at)
    select ${id('parent', s)}, 'default', 'history-' || s, 'user', 'completed', now()
    from ${sessions}
  `.execute(db)
  await sql`
    insert into attempts (id, namespace_id, agent_id, session_id, name, prompt, status, stop_reason,
                          output_preview, output_truncated, output_bytes, output_digest,
                          fingerprint, terminal_at, parent_run_id)
    select ${id('attempt', s, i)}, 'default', ${id('agent', s)}, 'history-' || s, 'x', '"p"',
           'terminal', 'completed', '', false, 0, 'd', 'f', now(), ${id('parent', s)}
    from ${each}
  `.execute(db)
  await sql`
    insert into runs (id, namespace_id, session_id, trigger_type, status, cause_attempt_id,
                      settled_at)
    select ${id('carrier', s, i)}, 'default', 'history-' || s, 'async_subagent_result',
           'completed', ${id('attempt', s, i)}, now()
    from ${each}
  `.execute(db)
  await sql`
    insert into continuations (attempt_id, namespace_id, session_id, parent_run_id, state,
                               consumer_run_id, input, input_digest, receipt, delivered_at)
    select ${id('attempt', s, i)}, 'default', 'history-' || s, ${id('parent', s)}, 'delivered',
           ${id('carrier', s, i)}, '{}', 'd', '{}', now()
    from ${each}
  `.execute(db)
}

describe('artifact chunks are read and collected through indexes', () => {
  test("a range read takes its chunks by primary key; expiry's orphan collection takes uploads by age; a commit reads its agent's history size from the history's end", async ({
    db,
  }) => {
    // Many uploads of many chunks, most of them recent, analysed.
    await sql`
      insert into artifact_uploads (id, session_id, attempt_id, bytes, digest, chunks, created_at)
      select gen_random_uuid(), 's', gen_random_uuid(), 20, 'd', 20,
             now() - (g % 100) * interval '1 minute'
      from generate_series(1, 500) g
    `.execute(db)
    await sql`
      insert into artifact_chunks (upload_id, session_id, seq, content, digest)
      select u.id, u.session_id, s, '\\x00'::bytea, 'd'
      from artifact_uploads u, generate_series(0, 19) s
    `.execute(db)
    await sql`analyze artifact_uploads`.execute(db)
    await sql`analyze artifact_chunks`.execute(db)
    const planOf = async (statement: string) => {
      const explained = await sql<{ 'QUERY PLAN': string }>`explain ${sql.raw(statement)}`.execute(
        db,
      )
      return explained.rows.map((r) => r['QUERY PLAN']).join('\n')
    }
    const range = await planOf(`
      select seq, content, digest from artifact_chunks
      where upload_id = '00000000-0000-4000-8000-000000000000' and seq between 3 and 4
      order by seq`)
    expect(range).toContain('artifact_chunks_pkey')
    expect(range).toMatch(/Index Cond: \(\(upload_id = .*seq >= 3.*seq <= 4/)
    expect(range).not.toMatch(/Seq Scan/)
    const orphans = await planOf(`
      select id from artifact_uploads
      where created_at < now() - interval '15 minutes' order by created_at limit 100
      for update skip locked`)
    expect(orphans).toContain('artifact_uploads_created_idx')
    expect(orphans).not.toMatch(/Seq Scan/)
    const size = await planOf(`
      select total_bytes from agent_context_events
      where agent_id = '00000000-0000-4000-8000-000000000000' order by seq desc limit 1`)
    expect(size).toContain('Index Scan Backward using agent_context_events_pkey')
  })
})

describe('ledger retention reads indexes, not the history it keeps', () => {
  test("a retention batch's statements find their rows through indexes", async ({
    db,
    databaseUrl,
  }) => {
    // A long history, most of it younger than the retention, and a few hundred finished long ago.
    await longHistory(db, 'retention')
    const pool = createDb({ connectionString: databaseUrl, maxConnections: 1 })
    try {
      await sql`set plan_cache_mode = force_generic_plan`.execute(pool)
      const batch = await removeExpiredHistory(pool, {
        defaultRetentionMs: 30 * 24 * 3_600_000,
        limit: 50,
      })
      expect(batch).toMatchObject({ attempts: 50, runs: 50 })
      for (const marker of ['doomed_agents', 'runs_gone']) {
        const plan = await explainPrepared(pool, marker)
        expect(plan, marker).not.toMatch(/Seq Scan on (attempts|agents|runs)\b/)
      }
      expect(await explainPrepared(pool, 'doomed_agents')).toContain(
        'attempts_namespace_terminal_idx',
      )
      expect(await explainPrepared(pool, 'runs_gone')).toContain('runs_ended_idx')
      // What the dashboard shows retention removes next: counted from the same indexes, capped.
      const due = await countRetentionDue(pool, {
        defaultRetentionMs: 30 * 24 * 3_600_000,
        cap: 10,
      })
      expect(due).toEqual([
        { namespaceId: 'default', retentionMs: 30 * 24 * 3_600_000, attempts: 10, runs: 10 },
      ])
      const duePlan = await explainPrepared(pool, 'ns.retention_ms::text')
      expect(duePlan).toMatch(
        /Index (Only )?Scan using attempts_(namespace_terminal|terminal_at)_idx/,
      )
      expect(duePlan).toContain('runs_ended_idx')
      expect(duePlan).not.toMatch(/Seq Scan on (attempts|runs)\b/)
    } finally {
      await pool.destroy()
    }
  })
})

/** The generic plan of the one statement prepared on `pool` containing `marker`, any values. */
async function explainPrepared(pool: Db, marker: string): Promise<string> {
  const { rows } = await sql<{ name: string; types: string[] }>`
    select name, parameter_types::text[] as types from pg_prepared_statements
    where strpos(statement, ${marker}) > 0`.execute(pool)
  const [statement] = rows
  if (statement === undefined || rows.length > 1)
    throw new Error(`expected one prepared statement containing ${marker}, found ${rows.length}`)
  const values = statement.types.map((t) =>
    t.endsWith('[]') ? `'{}'` : t === 'text' ? `'default'` : '1',
  )
  const explained = await sql<{ 'QUERY PLAN': string }>`${sql.raw(
    `explain execute ${statement.name}(${values.join(', ')})`,
  )}`.execute(pool)
  return explained.rows.map((r) => r['QUERY PLAN']).join('\n')
}

/**
 * 50,000 terminal attempts (300 of them ended 40 days ago, the rest a day ago) and 20,000 ended
 * runs (100 of them 40 days ago), written straight into the ledger and analyzed.
 */
async function longHistory(db: Db, tag: string): Promise<void> {
  await sql`insert into sessions (namespace_id, id) values ('default', ${tag})`.execute(db)
  await sql`
      insert into agents (id, namespace_id, session_id, name)
      select md5(${tag} || '-agent-' || i)::uuid, 'default', ${tag}, 'x' from generate_series(1, 50000) i
    `.execute(db)
  await sql`
      insert into attempts (id, namespace_id, agent_id, session_id, name, prompt, status,
                            stop_reason, output_bytes, output_digest, fingerprint, terminal_at)
      select md5(${tag} || '-attempt-' || i)::uuid, 'default', md5(${tag} || '-agent-' || i)::uuid, ${tag}, 'x', '"p"',
             'terminal', 'completed', 0, 'd', 'f',
             now() - case when i <= 300 then interval '40 days' else interval '1 day' end
      from generate_series(1, 50000) i
    `.execute(db)
  await sql`
      insert into runs (id, namespace_id, session_id, trigger_type, status, settled_at)
      select md5(${tag} || '-run-' || i)::uuid, 'default', ${tag}, 'user', 'completed',
             now() - case when i <= 100 then interval '40 days' else interval '1 day' end
      from generate_series(1, 20000) i
    `.execute(db)
  await sql`analyze`.execute(db)
}

describe("the reconciler's sweeps and the dashboard's reads of running attempts follow the work", () => {
  test('expired leases, stale accepted attempts, live leases and state counts read no history', async ({
    db,
    databaseUrl,
  }) => {
    await longHistory(db, 'sweeps')
    await runningAttempts(db, 300)
    await sql`analyze`.execute(db)
    const pool = createDb({ connectionString: databaseUrl, maxConnections: 1 })
    try {
      await sql`set plan_cache_mode = force_generic_plan`.execute(pool)
      await findExpiredRunning(pool, { limit: 500 })
      await findStaleAccepted(pool, { olderThanMs: 10_000, limit: 500 })
      expect((await listLiveLeases(pool, { limit: 200 })).leases).toHaveLength(200)
      await countAttemptStates(pool, { cap: 10_000, terminalWindow: 1000, transitionScan: 50_000 })
      for (const marker of [
        "where status = 'running' and lease_expires_at <= now()",
        "where status = 'accepted' and created_at <=",
        'order by lease_expires_at limit',
        'union all',
      ]) {
        const plan = await explainPrepared(pool, marker)
        expect(plan, marker).not.toMatch(/Seq Scan on attempts\b/)
      }
      expect(
        await explainPrepared(pool, "where status = 'running' and lease_expires_at <= now()"),
      ).toContain('attempts_running_idx')
    } finally {
      await pool.destroy()
    }
  })
})

describe("the dashboard's sessions view reads indexes, not the history behind it", () => {
  test('the recently active sessions and one session with its runs and their children are found through indexes', async ({
    db,
    databaseUrl,
  }) => {
    await longHistory(db, 'sessions-view')
    // Many sessions, one of them with runs whose children are attempts naming their parent run.
    await sql`
      insert into sessions (namespace_id, id)
      select 'default', 'many-' || i from generate_series(1, 20000) i`.execute(db)
    await sql`
      insert into runs (id, namespace_id, session_id, trigger_type, status, settled_at)
      select md5('view-run-' || i)::uuid, 'default', 'many-1', 'user', 'completed', now()
      from generate_series(1, 3) i`.execute(db)
    await sql`
      insert into agents (id, namespace_id, session_id, name)
      select md5('view-child-' || i)::uuid, 'default', 'many-1', 'x' from generate_series(1, 6) i`.execute(
      db,
    )
    await sql`
      insert into attempts (id, namespace_id, agent_id, session_id, name, prompt, status,
                            stop_reason, output_bytes, output_digest, fingerprint, terminal_at,
                            parent_run_id)
      select md5('view-child-' || i)::uuid, 'default', md5('view-child-' || i)::uuid, 'many-1', 'x',
             '"p"', 'terminal', 'completed', 0, 'd', 'f', now(), md5('view-run-' || (i % 3 + 1))::uuid
      from generate_series(1, 6) i`.execute(db)
    await sql`analyze`.execute(db)
    let text = ''
    const pool = createDb({
      connectionString: databaseUrl,
      maxConnections: 1,
      onQuery: (statement) => {
        text = statement
      },
    })
    try {
      await sql`set plan_cache_mode = force_generic_plan`.execute(pool)
      const active = await listActiveSessions(pool, { limit: 50, scan: 2000 })
      // Bound by literals, so it has no parameter: its plan is the one `explain` shows.
      expect(text).toContain('with recent as')
      const explained = await sql<{ 'QUERY PLAN': string }>`explain ${sql.raw(text)}`.execute(db)
      const sessions = explained.rows.map((r) => r['QUERY PLAN']).join('\n')
      expect(active[0]).toMatchObject({ namespaceId: 'default', sessionId: 'many-1' })
      const view = await getSessionRuns(pool, 'default', 'many-1', { runs: 100, children: 50 })
      expect(view?.runs.map((r) => r.children.length)).toEqual([2, 2, 2])

      expect(sessions).toContain('attempts_terminal_at_idx')
      expect(sessions).toContain('sessions_pkey')
      expect(sessions).not.toMatch(/Seq Scan on (attempts|sessions)\b/)
      const runs = await explainPrepared(pool, 'left join attempts own')
      for (const index of ['sessions_pkey', 'runs_session_idx', 'attempts_parent_run_idx'])
        expect(runs, index).toContain(index)
      expect(runs).not.toMatch(/Seq Scan on (attempts|runs|sessions)\b/)
    } finally {
      await pool.destroy()
    }
  })
})

describe('every other statement of the hot paths reads indexes, not the history', () => {
  test("accept, wait read, cancel, steer, recent terminals, the reconciler sweeps, a retention batch's delivery removal and the metrics read, under their generic plans", async ({
    db,
    databaseUrl,
  }) => {
    // A long history (attempts with their transitions, agents, runs, delivered continuations,
    // sessions), a few hundred running, analysed.
    await longHistory(db, 'hot')
    await deliveredHistory(db, { sessions: 200, perSession: 50 })
    const running = await runningAttempts(db, 300)
    await sql`
      insert into sessions (namespace_id, id)
      select 'default', 'hot-idle-' || g from generate_series(1, 20000) g`.execute(db)
    await sql`
      insert into attempt_transitions (attempt_id, session_id, from_status, to_status, event,
                                       owner_generation)
      select id, session_id, 'running', 'terminal', 'committed', 1 from attempts`.execute(db)
    await sql`
      insert into agent_context_events (agent_id, session_id, seq, attempt_id, event)
      select agent_id, session_id, 0, id, '{}' from attempts where session_id = 'hot'`.execute(db)
    // Every attempt of the history told a webhook of its end.
    await sql`
      insert into webhook_deliveries (id, namespace_id, session_id, event_type, attempt_id, state,
                                      tries, next_try_at, delivered_at)
      select 'msg_hot_' || replace(id::text, '-', ''), namespace_id, session_id,
             'attempt.terminal', id, 'delivered', 1, null, now()
      from attempts where session_id = 'hot'`.execute(db)
    await sql`analyze`.execute(db)
    const pool = createDb({ connectionString: databaseUrl, maxConnections: 1 })
    try {
      await sql`set plan_cache_mode = force_generic_plan`.execute(pool)
      const [queued] = await acceptDelegations(pool, [scriptedDelegation('hot-paths')])
      if (queued?.kind !== 'accepted') throw new Error('not accepted')
      const [runningId, steeredId] = running.map((r) => r.attemptId)
      if (runningId === undefined || steeredId === undefined) throw new Error('none running')
      await getAttempts(pool, [queued.attemptId, runningId])
      await requestCancel(pool, { attemptId: runningId, reason: 'plans', namespaceId: NS })
      await requestCancel(pool, { attemptId: queued.attemptId, reason: 'plans', namespaceId: NS })
      await recordSteering(pool, { attemptId: steeredId, content: { text: 'steer' } })
      await findUndeliveredSteering(pool, { attemptId: steeredId, afterSequence: 0 })
      await markSteeringDelivered(pool, {
        attemptId: steeredId,
        ownerId: 'w1',
        ownerGeneration: 1,
        throughSequence: 1,
      })
      await listRecentTerminals(pool, { limit: 20, transitionScan: 50_000 })
      // A delegation into a budgeted session, naming a parent attempt: the session's lock, its
      // budget read (with the parent's depth) and the accept's read of the parent.
      const [parent] = await acceptDelegations(pool, [scriptedDelegation('hot-budgeted')])
      if (parent?.kind !== 'accepted') throw new Error('not accepted')
      const nested = { ...scriptedDelegation('hot-budgeted'), parentAttemptId: parent.attemptId }
      const seen: number[] = []
      const [child] = await acceptWithinBudgets(
        pool,
        { namespaceId: NS, sessionId: 'hot-budgeted' },
        [nested],
        (use) => {
          seen.push(use.depth)
          return undefined
        },
      )
      expect(child?.kind).toBe('accepted')
      expect(seen).toEqual([2])
      await idleHostedSessions(pool, 500)
      await abandonExpiredRuns(pool, { limit: 500 })
      await expireArtifacts(pool, { limit: 100 })
      await namespaceArtifactBytes(pool)
      // A retention batch deletes its attempts' webhook deliveries by attempt.
      const removed = await removeExpiredHistory(pool, {
        defaultRetentionMs: 30 * 24 * 3_600_000,
        limit: 50,
      })
      expect(removed.attempts).toBeGreaterThan(0)
      console.log(await explainPrepared(pool, 'doomed_agents'))
      expect(await explainPrepared(pool, 'doomed_agents')).toContain(
        'webhook_deliveries_attempt_idx',
      )
      const explained = await explainEveryPrepared(pool)
      expect(explained.length).toBeGreaterThanOrEqual(12)
      const scans = explained.filter(({ plan }) =>
        /Seq Scan on (attempts|agents|attempt_transitions|agent_context_events|runs|continuations|sessions|webhook_deliveries)\b/.test(
          plan,
        ),
      )
      expect(scans).toEqual([])
    } finally {
      await pool.destroy()
    }
  }, 120_000)
})

/** The generic plan of every statement prepared on `pool`, with values of the declared types. */
async function explainEveryPrepared(pool: Db): Promise<{ statement: string; plan: string }[]> {
  const { rows } = await sql<{ name: string; statement: string; types: string[] }>`
    select name, statement, parameter_types::text[] as types from pg_prepared_statements
    order by prepare_time`.execute(pool)
  const value = (type: string): string => {
    if (type.endsWith('[]')) return `'{}'`
    if (type === 'uuid') return `'${randomUUID()}'`
    if (type.startsWith('timestamp')) return `now()`
    if (type === 'jsonb' || type === 'json') return `'{}'`
    if (type === 'boolean') return 'false'
    if (type === 'text' || type.startsWith('character')) return `'default'`
    return '1'
  }
  const out: { statement: string; plan: string }[] = []
  for (const row of rows) {
    const explained = await sql<{ 'QUERY PLAN': string }>`${sql.raw(
      `explain execute ${row.name}(${row.types.map(value).join(', ')})`,
    )}`.execute(pool)
    out.push({
      statement: row.statement.replace(/\s+/g, ' ').slice(0, 160),
      plan: explained.rows.map((r) => r['QUERY PLAN']).join('\n'),
    })
  }
  return out
}
