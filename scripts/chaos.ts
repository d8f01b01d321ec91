// `npm run chaos [-- --json] [--count N] [--clients N] [--workers N] [--verbose] [--strict]
//                 [--submit-timeout S] [--quiesce-timeout S]`
//
// Runs the whole system as separate processes (the API and a worker fleet), drives N delegations of
// the built-in `scripted` child (instant, slow, failing, hanging-then-cancelled, steered) and of
// the `rememberer` markdown subagent (continued: a first turn, then a continuation of the same
// agent) from many concurrent HTTP clients, and meanwhile injects faults at random intervals:
// SIGKILL a worker (and start a replacement), restart the API, FLUSHDB the chaos Redis database,
// terminate the chaos database's Postgres backends. Then it waits for quiescence and audits the
// ledger with SQL:
//   lost                 attempts the clients got a 202 for (continuations too), not terminal
//   stuck                attempts in the ledger that are not terminal after the wait
//   duplicate_terminal   attempts with more than one transition to `terminal`
//   duplicate_execution  attempts with more than one `claimed` transition
//   context.bad          violations of the agent-history checks (lib/chaos-context.ts)
// With --json the last stdout line is one JSON object (everything else goes to stderr). Exits
// non-zero when an invariant fails, when fewer than N delegations (or fewer continuations than
// continued delegations) were accepted, or when a fault kind never fired. A process that exits
// unasked (a crash) is restarted, as a supervisor would, and reported; --strict also fails the run
// on it. --verbose echoes every process's output to stderr. Isolation: database `baton_chaos`
// (recreated), Redis logical database 9 (flushed at the end), a unique queue prefix, a random API
// port. Process logs (and the rememberer's spec, script and workspace) go to a temporary directory.
import { randomUUID } from 'node:crypto'
import http from 'node:http'
import net from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { parseArgs } from 'node:util'
import { Redis } from 'ioredis'
import pg from 'pg'
import {
  CONTEXT_CHECKS,
  REMEMBERER,
  auditContext,
  turnPrompt,
  writeRemembererDirs,
  type ContextAudit,
  type ContinuedPair,
} from './lib/chaos-context.ts'
import { Fleet } from './lib/chaos-fleet.ts'
import { httpJson, parseJson } from './lib/http.ts'
import {
  DEFAULT_DATABASE_URL,
  DEFAULT_REDIS_URL,
  databaseName,
  prepareDatabase,
  withDatabase,
} from './lib/services.ts'

const { values: args } = parseArgs({
  options: {
    json: { type: 'boolean', default: false },
    verbose: { type: 'boolean', default: false },
    strict: { type: 'boolean', default: false },
    count: { type: 'string', default: '10000' },
    clients: { type: 'string', default: '64' },
    workers: { type: 'string', default: '3' },
    'submit-timeout': { type: 'string', default: '180' },
    'quiesce-timeout': { type: 'string', default: '120' },
  },
})
const COUNT = Number(args.count)
const CLIENTS = Number(args.clients)
const WORKERS = Number(args.workers)
const SUBMIT_TIMEOUT_MS = Number(args['submit-timeout']) * 1000
const QUIESCE_TIMEOUT_MS = Number(args['quiesce-timeout']) * 1000
for (const [name, value] of Object.entries({ COUNT, CLIENTS, WORKERS }))
  if (!Number.isInteger(value) || value < 1) throw new Error(`--${name.toLowerCase()} must be ≥ 1`)
if (WORKERS < 3) console.error('chaos: note: the issue asks for at least three workers')

const REDIS_DB = 9
const redisUrl = (() => {
  const u = new URL(process.env.REDIS_URL ?? DEFAULT_REDIS_URL)
  u.pathname = `/${REDIS_DB}`
  return u.toString()
})()
const databaseUrl = withDatabase(process.env.DATABASE_URL ?? DEFAULT_DATABASE_URL, 'baton_chaos')
const DB_NAME = databaseName(databaseUrl)
const PREFIX = `baton-chaos-${randomUUID().slice(0, 8)}`
/** A fixed port for the whole run (clients reconnect to it after API restarts); chosen in main. */
let PORT = 0
const LOG_DIR = join(tmpdir(), PREFIX)

const t0 = performance.now()
const elapsed = (): string => `${((performance.now() - t0) / 1000).toFixed(1)}s`
const log = (line: string): void => {
  if (args.json) console.error(line)
  else console.log(line)
}
const rand = (min: number, max: number): number => min + Math.floor(Math.random() * (max - min + 1))

// ---------------------------------------------------------------------------------------------
// The workload

type Kind = 'instant' | 'slow' | 'failing' | 'hang' | 'steered' | 'continued'
const MIX: readonly (readonly [Kind, number])[] = [
  ['instant', 42],
  ['slow', 15],
  ['failing', 10],
  ['hang', 15],
  ['steered', 10],
  ['continued', 8],
]
const STEER_BACKSTOP_MS = 5_000
/** The bound of one `GET …/wait` (an API restart waits for the waits in flight). */
const WAIT_BOUND_MS = 2_000

function pickKind(): Kind {
  let r = Math.random() * 100
  for (const [kind, weight] of MIX) {
    if (r < weight) return kind
    r -= weight
  }
  return 'instant'
}

const sessionOf = (i: number): string => `chaos-${i % 97}`

function delegationFor(kind: Kind, i: number): { name: string; prompt: string; expect?: string } {
  if (kind === 'continued')
    return { name: REMEMBERER, prompt: turnPrompt(i, 'a'), expect: turnPrompt(i, 'a') }
  return { name: 'scripted', ...promptFor(kind, i) }
}

function promptFor(
  kind: Exclude<Kind, 'continued'>,
  i: number,
): { prompt: string; expect?: string } {
  switch (kind) {
    case 'instant':
      return { prompt: JSON.stringify({ output: `ok-${i}` }), expect: `ok-${i}` }
    case 'slow':
      return {
        prompt: JSON.stringify({ output: `slow-${i}`, delayMs: rand(200, 2000) }),
        expect: `slow-${i}`,
      }
    case 'failing':
      return { prompt: JSON.stringify({ fail: 'boom' }) }
    case 'hang':
      return { prompt: JSON.stringify({ hang: true }) }
    case 'steered':
      return { prompt: JSON.stringify({ awaitSteering: 1 }) }
    default: {
      const never: never = kind
      throw new Error(`unknown kind ${String(never)}`)
    }
  }
}

interface Submitted {
  readonly i: number
  readonly kind: Kind
  readonly agentId: string
  readonly expect: string | undefined
  readonly at: number
  steered?: boolean
  cancel?: string
}

const submitted = new Map<string, Submitted>()
/** Continuations (second turns of `continued`) the client got a 202 for, by attempt id. */
const continuations = new Map<string, ContinuedPair>()
const stats = {
  postConnectionErrors: 0,
  postRetryStatus: new Map<number, number>(),
  postRejected: new Map<number, number>(),
  steer: new Map<string, number>(),
  cancel: new Map<string, number>(),
  continuation: new Map<string, number>(),
  followUpErrors: 0,
  followUpGaveUp: 0,
  orphanCancels: 0,
}
const bump = <K>(m: Map<K, number>, k: K): void => {
  m.set(k, (m.get(k) ?? 0) + 1)
}

const submitAgent = new http.Agent({ keepAlive: true, maxSockets: CLIENTS })
const followAgent = new http.Agent({ keepAlive: true, maxSockets: 32 })
/** Bounded waits hold their socket for up to WAIT_BOUND_MS: kept off the cancel/steer sockets. */
const waitAgent = new http.Agent({ keepAlive: true, maxSockets: 256 })
const followUps = new Set<Promise<void>>()
let followUpDeadline = Number.POSITIVE_INFINITY

function track(p: Promise<void>): void {
  followUps.add(p)
  void p.finally(() => followUps.delete(p))
}

/** POST cancel until the API answers 202, 409 (already terminal) or 404; connection errors retry. */
async function cancelUntilAnswered(attemptId: string, why: string): Promise<string> {
  for (;;) {
    try {
      const r = await httpJson(followAgent, PORT, 'POST', `/v1/attempts/${attemptId}/cancel`, {
        reason: `chaos ${why}`,
      })
      if (r.status === 202) {
        const answer = parseJson(r.body)?.outcome
        const outcome = typeof answer === 'string' ? answer : 'accepted'
        bump(stats.cancel, `${why}:${outcome}`)
        return outcome
      }
      if (r.status === 409 || r.status === 404) {
        bump(stats.cancel, `${why}:${r.status}`)
        return String(r.status)
      }
      bump(stats.cancel, `${why}:retry-${r.status}`)
    } catch {
      stats.followUpErrors += 1
    }
    if (Date.now() > followUpDeadline) {
      stats.followUpGaveUp += 1
      return 'gave-up'
    }
    await sleep(rand(100, 300))
  }
}

async function steer(attemptId: string, sub: Submitted): Promise<void> {
  const stopAt = sub.at + STEER_BACKSTOP_MS
  for (;;) {
    try {
      const r = await httpJson(followAgent, PORT, 'POST', `/v1/attempts/${attemptId}/steer`, {
        content: `steer-${sub.i}`,
      })
      if (r.status === 202) {
        sub.steered = true
        bump(stats.steer, '202')
        return
      }
      if (r.status === 404 || r.status === 409) {
        bump(stats.steer, String(r.status))
        return
      }
      bump(stats.steer, `retry-${r.status}`)
    } catch {
      stats.followUpErrors += 1
    }
    if (Date.now() > stopAt) {
      bump(stats.steer, 'gave-up')
      return
    }
    await sleep(rand(100, 300))
  }
}

/**
 * Bounded waits (`GET …/wait`, each at most WAIT_BOUND_MS) until the attempt is terminal; answers
 * its stop reason, or undefined once the follow-up deadline passed. Connection errors retry.
 */
async function waitUntilTerminal(attemptId: string): Promise<string | undefined> {
  for (;;) {
    try {
      const r = await httpJson(
        waitAgent,
        PORT,
        'GET',
        `/v1/attempts/${attemptId}/wait?timeoutMs=${WAIT_BOUND_MS}`,
        undefined,
        WAIT_BOUND_MS + 15_000,
      )
      const view = parseJson(r.body)
      if (r.status === 200 && view?.status === 'terminal' && typeof view.stopReason === 'string')
        return view.stopReason
      // A snapshot (the bound expired) waits again at once; anything else is a retried fault.
      if (r.status !== 200) {
        bump(stats.continuation, `wait-retry-${r.status}`)
        await sleep(rand(100, 300))
      }
    } catch {
      stats.followUpErrors += 1
      await sleep(rand(100, 300))
    }
    if (Date.now() > followUpDeadline) {
      stats.followUpGaveUp += 1
      return undefined
    }
  }
}

/**
 * Continues the agent of a `continued` delegation once its first turn is terminal, whatever that
 * turn's outcome: a first turn that appended nothing (lost with its worker, failed) leaves the
 * history empty, and the continuation then sees only its own prompt. POSTed like a first
 * delegation: one idempotency key per continuation, 5xx/429 and connection errors retried.
 */
async function continueAgent(firstAttemptId: string, sub: Submitted): Promise<void> {
  const firstStop = await waitUntilTerminal(firstAttemptId)
  if (firstStop === undefined) return
  bump(stats.continuation, `first ${firstStop}`)
  for (;;) {
    try {
      const r = await httpJson(
        followAgent,
        PORT,
        'POST',
        `/v1/sessions/${sessionOf(sub.i)}/delegations`,
        { name: REMEMBERER, agentId: sub.agentId, prompt: turnPrompt(sub.i, 'b') },
        15_000,
        { 'idempotency-key': `${PREFIX}-${sub.i}-b` },
      )
      if (r.status === 202) {
        const attemptId = parseJson(r.body)?.attemptId
        if (typeof attemptId !== 'string') throw new Error(`202 without attemptId: ${r.body}`)
        continuations.set(attemptId, { i: sub.i, firstAttemptId, attemptId })
        bump(stats.continuation, '202')
        return
      }
      if (r.status < 500 && r.status !== 429) {
        if (!stats.continuation.has(`rejected-${r.status}`))
          log(`chaos: continuation rejected ${r.status}: ${r.body.slice(0, 300)}`)
        bump(stats.continuation, `rejected-${r.status}`)
        return
      }
      bump(stats.continuation, `retry-${r.status}`)
    } catch {
      stats.followUpErrors += 1
    }
    if (Date.now() > followUpDeadline) {
      stats.followUpGaveUp += 1
      return
    }
    await sleep(rand(50, 250))
  }
}

function scheduleFollowUps(attemptId: string, sub: Submitted): void {
  if (sub.kind === 'hang') {
    track(
      (async () => {
        await sleep(rand(100, 1500))
        sub.cancel = await cancelUntilAnswered(attemptId, 'hang')
      })(),
    )
  } else if (sub.kind === 'steered') {
    track(
      (async () => {
        await sleep(rand(100, 1500))
        await steer(attemptId, sub)
        // Cancellation is the backstop: a steered child that never got its message would hang.
        await sleep(Math.max(0, sub.at + STEER_BACKSTOP_MS - Date.now()))
        sub.cancel = await cancelUntilAnswered(attemptId, 'steer-backstop')
      })(),
    )
  } else if (sub.kind === 'continued') {
    track(continueAgent(attemptId, sub))
  }
}

let nextIndex = 0
let submitDeadline = Number.POSITIVE_INFINITY

async function client(): Promise<void> {
  for (;;) {
    const i = nextIndex++
    if (i >= COUNT) return
    const kind = pickKind()
    const { name, prompt, expect } = delegationFor(kind, i)
    for (;;) {
      if (Date.now() > submitDeadline) return
      try {
        const r = await httpJson(
          submitAgent,
          PORT,
          'POST',
          `/v1/sessions/${sessionOf(i)}/delegations`,
          { name, prompt },
          15_000,
          // One key per logical delegation: a retry after a lost answer gets the first attempt
          // back instead of creating a second delegation.
          { 'idempotency-key': `${PREFIX}-${i}` },
        )
        if (r.status === 202) {
          const answer = parseJson(r.body)
          const attemptId = answer?.attemptId
          const agentId = answer?.agentId
          if (typeof attemptId !== 'string' || typeof agentId !== 'string')
            throw new Error(`202 without attemptId or agentId: ${r.body}`)
          const sub: Submitted = { i, kind, agentId, expect, at: Date.now() }
          submitted.set(attemptId, sub)
          scheduleFollowUps(attemptId, sub)
          break
        }
        if (r.status >= 500 || r.status === 429) {
          bump(stats.postRetryStatus, r.status)
        } else {
          // A 4xx is a contract problem, not a fault: count it and move on.
          if (!stats.postRejected.has(r.status))
            log(`chaos: delegation rejected ${r.status}: ${r.body.slice(0, 300)}`)
          bump(stats.postRejected, r.status)
          break
        }
      } catch {
        // Connection error (API restarting) or timeout: the lost request may or may not have
        // been accepted. Retry with the same idempotency key: the ledger answers the first one.
        stats.postConnectionErrors += 1
      }
      await sleep(rand(50, 250))
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Faults

type FaultKind = 'worker_kills' | 'api_restarts' | 'redis_flushes' | 'pg_kills'
const FAULT_KINDS: readonly FaultKind[] = [
  'worker_kills',
  'api_restarts',
  'redis_flushes',
  'pg_kills',
]
const faults: Record<FaultKind, number> = {
  worker_kills: 0,
  api_restarts: 0,
  redis_flushes: 0,
  pg_kills: 0,
}

function shuffled<T>(items: readonly T[]): T[] {
  const a = [...items]
  for (let i = a.length - 1; i > 0; i -= 1) {
    const j = Math.floor(Math.random() * (i + 1))
    ;[a[i], a[j]] = [a[j]!, a[i]!]
  }
  return a
}

async function injectFault(kind: FaultKind, fleet: Fleet, redis: Redis): Promise<string> {
  switch (kind) {
    case 'worker_kills': {
      const { killed, started } = await fleet.killWorker()
      return `SIGKILL ${killed}, started ${started}`
    }
    case 'api_restarts': {
      const t = performance.now()
      await fleet.restartApi()
      return `API restarted in ${Math.round(performance.now() - t)} ms`
    }
    case 'redis_flushes': {
      await redis.flushdb()
      return `FLUSHDB on Redis db ${REDIS_DB}`
    }
    case 'pg_kills': {
      // Connected to the `postgres` database, so this client is never one of its own targets.
      const admin = new pg.Client({ connectionString: withDatabase(databaseUrl, 'postgres') })
      admin.on('error', () => undefined)
      await admin.connect()
      try {
        const r = await admin.query<{ n: number }>(
          `select count(*)::int as n from (
             select pg_terminate_backend(pid) from pg_stat_activity
             where datname = $1 and pid <> pg_backend_pid()) t`,
          [DB_NAME],
        )
        return `terminated ${r.rows[0]?.n ?? 0} Postgres backends`
      } finally {
        await admin.end().catch(() => undefined)
      }
    }
    default: {
      const never: never = kind
      throw new Error(`unknown fault ${String(never)}`)
    }
  }
}

async function faultLoop(fleet: Fleet, redis: Redis, submissionDone: () => boolean): Promise<void> {
  let order: FaultKind[] = []
  for (;;) {
    await sleep(rand(1000, 4000))
    const allFired = FAULT_KINDS.every((k) => faults[k] > 0)
    if (submissionDone() && allFired) return
    if (order.length === 0) order = shuffled(FAULT_KINDS)
    // Once submission has ended, only the kinds that never fired are still owed.
    let kind = order.shift()!
    if (submissionDone()) kind = FAULT_KINDS.find((k) => faults[k] === 0) ?? kind
    try {
      const what = await injectFault(kind, fleet, redis)
      faults[kind] += 1
      log(`chaos: [${elapsed()}] fault ${kind}: ${what}`)
    } catch (error) {
      log(`chaos: [${elapsed()}] fault ${kind} failed: ${String(error)}`)
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Quiescence and audit

async function query<R extends pg.QueryResultRow>(
  pool: pg.Pool,
  text: string,
  values: unknown[] = [],
): Promise<R[]> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      return (await pool.query<R>(text, values)).rows
    } catch (error) {
      if (attempt >= 5) throw error
      await sleep(200)
    }
  }
}

/** Waits until no attempt is non-terminal; cancels hanging attempts nobody got a 202 for. */
async function waitForQuiescence(pool: pg.Pool): Promise<number> {
  const deadline = Date.now() + QUIESCE_TIMEOUT_MS
  const orphansCancelled = new Set<string>()
  let lastReport = 0
  for (;;) {
    const open = await query<{ id: string; status: string; prompt: string; age_ms: number }>(
      pool,
      `select id, status, prompt::text as prompt,
              (extract(epoch from now() - created_at) * 1000)::float8 as age_ms
       from attempts where status <> 'terminal'`,
    )
    if (open.length === 0) return 0
    for (const row of open) {
      // An accepted delegation whose 202 was lost (connection cut mid-answer) cannot be known to
      // the client; if its child waits for a cancel or a steer, the client must still end it.
      if (
        !submitted.has(row.id) &&
        !orphansCancelled.has(row.id) &&
        row.age_ms > STEER_BACKSTOP_MS &&
        /hang|awaitSteering/.test(row.prompt)
      ) {
        orphansCancelled.add(row.id)
        stats.orphanCancels += 1
        track(cancelUntilAnswered(row.id, 'orphan').then(() => undefined))
      }
    }
    if (Date.now() - lastReport > 5_000) {
      lastReport = Date.now()
      const byStatus = new Map<string, number>()
      for (const row of open) bump(byStatus, row.status)
      log(
        `chaos: [${elapsed()}] waiting for quiescence: ${[...byStatus].map(([s, n]) => `${n} ${s}`).join(', ')}`,
      )
    }
    if (Date.now() > deadline) return open.length
    await sleep(500)
  }
}

interface Audit {
  terminal: number
  lost: number
  duplicate_terminal: number
  duplicate_execution: number
  stuck: number
  ledger_rows: number
  unknown_to_client: number
  process_lost: number
  cancelled_queued: number
  outcomes: Map<string, number>
  byKind: Map<Kind, Map<string, number>>
  mismatchedOutput: number
  stuckSamples: { id: string; status: string; owner_generation: number; transitions: string }[]
  context: ContextAudit
}

async function audit(pool: pg.Pool): Promise<Audit> {
  const ids = [...submitted.keys(), ...continuations.keys()]
  const [counts] = await query<{
    terminal: number
    stuck: number
    ledger_rows: number
    duplicate_terminal: number
    duplicate_execution: number
    process_lost: number
    cancelled_queued: number
  }>(
    pool,
    `select
       (select count(*)::int from attempts where status = 'terminal') as terminal,
       (select count(*)::int from attempts where status <> 'terminal') as stuck,
       (select count(*)::int from attempts) as ledger_rows,
       (select count(*)::int from (select attempt_id from attempt_transitions
          where to_status = 'terminal' group by attempt_id having count(*) > 1) d) as duplicate_terminal,
       (select count(*)::int from (select attempt_id from attempt_transitions
          where event = 'claimed' group by attempt_id having count(*) > 1) d) as duplicate_execution,
       (select count(*)::int from attempt_transitions where event = 'process_lost') as process_lost,
       (select count(*)::int from attempt_transitions where event = 'cancelled_queued') as cancelled_queued`,
  )
  const [lost] = await query<{ lost: number; known: number }>(
    pool,
    `select count(*) filter (where a.status is distinct from 'terminal')::int as lost,
            count(a.id)::int as known
     from unnest($1::uuid[]) as k(id) left join attempts a on a.id = k.id`,
    [ids],
  )
  const rows = await query<{
    id: string
    stop_reason: string | null
    failure_category: string | null
    output_preview: string | null
  }>(
    pool,
    `select id, stop_reason, failure_category, output_preview from attempts where status = 'terminal'`,
  )
  const outcomes = new Map<string, number>()
  const byKind = new Map<Kind, Map<string, number>>()
  let mismatchedOutput = 0
  for (const row of rows) {
    const outcome = `${row.stop_reason ?? '?'}/${row.failure_category ?? '-'}`
    bump(outcomes, outcome)
    const sub = submitted.get(row.id)
    if (sub === undefined) continue
    let perKind = byKind.get(sub.kind)
    if (perKind === undefined) byKind.set(sub.kind, (perKind = new Map<string, number>()))
    bump(perKind, outcome)
    // A steered child outputs the message it was sent (only when the steer was accepted).
    const expect =
      sub.kind === 'steered' ? (sub.steered === true ? `steer-${sub.i}` : undefined) : sub.expect
    if (row.stop_reason === 'completed' && expect !== undefined && row.output_preview !== expect)
      mismatchedOutput += 1
  }
  const stuckSamples = await query<{
    id: string
    status: string
    owner_generation: number
    transitions: string
  }>(
    pool,
    `select a.id, a.status, a.owner_generation,
            coalesce(string_agg(t.event || '@' || t.owner_generation || ' ' || to_char(t.at, 'HH24:MI:SS.MS'), ', ' order by t.id), '') as transitions
     from attempts a left join attempt_transitions t on t.attempt_id = a.id
     where a.status <> 'terminal' or a.id in (
       select attempt_id from attempt_transitions where to_status = 'terminal'
       group by attempt_id having count(*) > 1
       union
       select attempt_id from attempt_transitions where event = 'claimed'
       group by attempt_id having count(*) > 1)
     group by a.id limit 10`,
  )
  return {
    terminal: counts?.terminal ?? 0,
    lost: lost?.lost ?? ids.length,
    duplicate_terminal: counts?.duplicate_terminal ?? 0,
    duplicate_execution: counts?.duplicate_execution ?? 0,
    stuck: counts?.stuck ?? 0,
    ledger_rows: counts?.ledger_rows ?? 0,
    unknown_to_client: (counts?.ledger_rows ?? 0) - (lost?.known ?? 0),
    process_lost: counts?.process_lost ?? 0,
    cancelled_queued: counts?.cancelled_queued ?? 0,
    outcomes,
    byKind,
    mismatchedOutput,
    stuckSamples,
    context: await auditContext(
      (text, values) => query(pool, text, values),
      [...continuations.values()],
    ),
  }
}

function table(title: string, rows: readonly (readonly [string, string | number])[]): void {
  const width = Math.max(title.length, ...rows.map(([k]) => k.length))
  log('')
  log(`| ${title.padEnd(width)} | ${'count'.padStart(7)} |`)
  log(`|${'-'.repeat(width + 2)}|${'-'.repeat(8)}:|`)
  for (const [k, v] of rows) log(`| ${k.padEnd(width)} | ${String(v).padStart(7)} |`)
}

// ---------------------------------------------------------------------------------------------

/** 4100 + random, checked free on 127.0.0.1. */
async function pickPort(): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt += 1) {
    const port = 4100 + Math.floor(Math.random() * 800)
    const free = await new Promise<boolean>((resolve) => {
      const server = net.createServer()
      server.once('error', () => resolve(false))
      server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)))
    })
    if (free) return port
  }
  throw new Error('no free port in 4100–4899')
}

async function main(): Promise<number> {
  PORT = await pickPort()
  log(
    `chaos: ${COUNT} delegations, ${CLIENTS} clients, ${WORKERS} workers; db ${DB_NAME}, ` +
      `redis db ${REDIS_DB}, prefix ${PREFIX}, port ${PORT}; logs in ${LOG_DIR}`,
  )
  await prepareDatabase(databaseUrl, { fresh: true })
  const redis = new Redis(redisUrl, { maxRetriesPerRequest: 3 })
  redis.on('error', () => undefined)
  await redis.flushdb()

  // The rememberer's spec, script and workspace, kept next to the process logs.
  const remembererDirs = await writeRemembererDirs(join(LOG_DIR, REMEMBERER))
  const env = {
    ...remembererDirs,
    DATABASE_URL: databaseUrl,
    REDIS_URL: redisUrl,
    QUEUE_PREFIX: PREFIX,
    LOG_LEVEL: 'info',
    HOST: '127.0.0.1',
    PORT: String(PORT),
    LEASE_TTL_MS: '3000',
    HEARTBEAT_INTERVAL_MS: '500',
    RECONCILE_INTERVAL_MS: '500',
    REQUEUE_AFTER_MS: '2000',
    WORKER_CONCURRENCY: '100',
  }
  const fleet = new Fleet({
    env,
    logDir: LOG_DIR,
    verbose: args.verbose,
    workers: WORKERS,
    onNote: (note) => log(`chaos: [${elapsed()}] ${note}`),
    onCrash: (c) =>
      log(
        `chaos: [${elapsed()}] CRASH: ${c.name} exited (${String(c.code)}) unasked: ${c.reason}; restarting it`,
      ),
  })
  const killOnExit = (): void => fleet.killRemaining()
  process.once('exit', killOnExit)
  const onSignal = (): void => {
    fleet.killRemaining()
    // Best effort: leave the chaos Redis database empty, but never hang on the way out.
    setTimeout(() => process.exit(130), 2_000).unref()
    void redis.flushdb().finally(() => process.exit(130))
  }
  process.once('SIGINT', onSignal)
  process.once('SIGTERM', onSignal)

  const pool = new pg.Pool({
    connectionString: databaseUrl,
    max: 2,
    application_name: 'baton-chaos',
  })
  pool.on('error', () => undefined)
  try {
    await fleet.start()
    log(`chaos: [${elapsed()}] API and ${WORKERS} workers ready; submitting`)

    // Submission and faults run together; faults continue until submission ends and every
    // kind has fired at least once.
    const submitStarted = performance.now()
    submitDeadline = Date.now() + SUBMIT_TIMEOUT_MS
    followUpDeadline = submitDeadline + 60_000
    let submissionDone = false
    const progress = setInterval(() => {
      log(
        `chaos: [${elapsed()}] submitted ${submitted.size}/${COUNT}, follow-ups pending ${followUps.size}, ` +
          `connection errors ${stats.postConnectionErrors}, faults ${JSON.stringify(faults)}`,
      )
    }, 5_000)
    const faultsDone = faultLoop(fleet, redis, () => submissionDone)
    await Promise.all(Array.from({ length: CLIENTS }, () => client()))
    submissionDone = true
    const submitSeconds = (performance.now() - submitStarted) / 1000
    log(
      `chaos: [${elapsed()}] submission ended: ${submitted.size} accepted in ${submitSeconds.toFixed(1)}s`,
    )
    await faultsDone
    log(`chaos: [${elapsed()}] faults ended: ${JSON.stringify(faults)}`)
    while (followUps.size > 0) await Promise.race(followUps)
    clearInterval(progress)
    log(
      `chaos: [${elapsed()}] follow-ups (cancel, steer, continue) settled; waiting for quiescence`,
    )

    const quiesceStarted = performance.now()
    const open = await waitForQuiescence(pool)
    while (followUps.size > 0) await Promise.race(followUps)
    const quiesceSeconds = (performance.now() - quiesceStarted) / 1000
    log(
      `chaos: [${elapsed()}] ${open === 0 ? 'quiescent' : `NOT quiescent (${open} open)`} after ${quiesceSeconds.toFixed(1)}s; auditing`,
    )
    const a = await audit(pool)

    const summary = {
      submitted: submitted.size,
      terminal: a.terminal,
      lost: a.lost,
      duplicate_terminal: a.duplicate_terminal,
      duplicate_execution: a.duplicate_execution,
      stuck: a.stuck,
      faults: { ...faults },
      context: { agents: a.context.agents, events: a.context.events, bad: a.context.bad },
    }
    const failures: string[] = []
    for (const key of ['lost', 'duplicate_terminal', 'duplicate_execution', 'stuck'] as const)
      if (summary[key] !== 0) failures.push(`${key} = ${summary[key]}`)
    for (const kind of FAULT_KINDS) if (faults[kind] === 0) failures.push(`no ${kind}`)
    if (submitted.size < COUNT) failures.push(`only ${submitted.size} of ${COUNT} accepted`)
    if (a.context.bad !== 0) failures.push(`context bad = ${a.context.bad}`)
    const continued = [...submitted.values()].filter((s) => s.kind === 'continued').length
    if (continuations.size < continued)
      failures.push(`only ${continuations.size} of ${continued} continuations accepted`)
    if (args.strict && fleet.crashes.length > 0)
      failures.push(`${fleet.crashes.length} process crashes`)

    const kindCounts = new Map<Kind, number>()
    for (const sub of submitted.values()) bump(kindCounts, sub.kind)
    table('invariant', [
      ['submitted (202)', summary.submitted],
      ['terminal', summary.terminal],
      ['lost', summary.lost],
      ['duplicate_terminal', summary.duplicate_terminal],
      ['duplicate_execution', summary.duplicate_execution],
      ['stuck', summary.stuck],
      ['context bad', a.context.bad],
    ])
    table(
      'fault',
      FAULT_KINDS.map((k) => [k, faults[k]] as const),
    )
    table(
      'stopReason/failureCategory',
      [...a.outcomes].sort((x, y) => y[1] - x[1]),
    )
    table(
      'kind → outcome',
      [...a.byKind].flatMap(([kind, m]) =>
        [...m]
          .sort((x, y) => y[1] - x[1])
          .map(([o, n]) => [`${kind} (${kindCounts.get(kind) ?? 0}) → ${o}`, n] as const),
      ),
    )
    table('context (agent histories)', [
      [`${REMEMBERER} agents`, a.context.agents],
      ['history events', a.context.events],
      ['continuations accepted', continuations.size],
      ...[...a.context.continuationOutcomes]
        .sort((x, y) => y[1] - x[1])
        .map(([o, n]) => [`continuation → ${o}`, n] as const),
      ...[...stats.continuation].sort().map(([s, n]) => [`continue: ${s}`, n] as const),
      ...[...a.context.violations].map(([check, n]) => [check, n] as const),
    ])
    table('ledger and client', [
      ['process crashes (restarted)', fleet.crashes.length],
      ['ledger rows', a.ledger_rows],
      ['rows unknown to the client (202 lost)', a.unknown_to_client],
      ['process_lost transitions', a.process_lost],
      ['cancelled_queued transitions', a.cancelled_queued],
      ['completed with unexpected output', a.mismatchedOutput],
      ['POST connection errors (retried)', stats.postConnectionErrors],
      ...[...stats.postRetryStatus].map(([s, n]) => [`POST answered ${s} (retried)`, n] as const),
      ...[...stats.postRejected].map(([s, n]) => [`POST rejected ${s}`, n] as const),
      ...[...stats.steer].map(([s, n]) => [`steer ${s}`, n] as const),
      ...[...stats.cancel].sort().map(([s, n]) => [`cancel ${s}`, n] as const),
      ['follow-up connection errors (retried)', stats.followUpErrors],
      ['follow-ups given up', stats.followUpGaveUp],
      ['orphan hang/steer attempts cancelled', stats.orphanCancels],
    ])
    log('')
    log(
      `elapsed ${elapsed()} (submission ${submitSeconds.toFixed(1)}s, quiescence ${quiesceSeconds.toFixed(1)}s); ` +
        `process logs: ${LOG_DIR}`,
    )
    if (fleet.crashes.length > 0) {
      const reasons = new Map<string, number>()
      for (const c of fleet.crashes) bump(reasons, `${c.name.replace(/-\d+$/, '')}: ${c.reason}`)
      log(
        `WARN: ${fleet.crashes.length} unexpected process exits (restarted by this script; --strict fails on them):`,
      )
      for (const [reason, n] of reasons) log(`  ${n}× ${reason}`)
    }
    if (a.context.bad > 0) {
      log('broken history checks:')
      for (const [check, n] of a.context.violations)
        if (n > 0) log(`  ${n}× ${check}: ${CONTEXT_CHECKS[check]}`)
      log('offending histories (first 10):')
      for (const line of a.context.samples) log(`  ${line}`)
    }
    if (a.stuckSamples.length > 0) {
      log('offending attempts (first 10):')
      for (const s of a.stuckSamples)
        log(`  ${s.id} ${s.status} gen ${s.owner_generation}: ${s.transitions}`)
    }
    log(failures.length === 0 ? 'chaos: PASS' : `chaos: FAIL: ${failures.join('; ')}`)
    if (args.json) console.log(JSON.stringify(summary))
    return failures.length === 0 ? 0 : 1
  } finally {
    await fleet.stopAll().catch(() => undefined)
    await redis.flushdb().catch(() => undefined)
    redis.disconnect()
    await pool.end().catch(() => undefined)
    submitAgent.destroy()
    followAgent.destroy()
    waitAgent.destroy()
  }
}

let code = 1
try {
  code = await main()
} catch (error) {
  console.error('chaos: error:', error)
}
// Library handles (ioredis reconnect timers, keep-alive sockets) must not keep a finished run alive.
process.exit(code)
