// The processes and reads the growth bench shares between its dimensions: one API and `--workers`
// workers on a fresh database (each worker serving its metrics on a port of its own), the bench's
// own pool on that database, and the children it keeps running (the scripted child told to hang,
// which runs until cancelled).
import { readFileSync } from 'node:fs'
import { setTimeout as sleep } from 'node:timers/promises'
import pg from 'pg'
import { createBatonClient, type BatonClient } from '@baton/client'
import { isTerminalView } from '@baton/contracts'
import { spawnApp, type AppProcess } from '@baton/testing/processes'
import { dropDatabase, issueDefaultKey, prepareDatabase, withDatabase } from '../services.ts'
import type { BenchContext } from './context.ts'
import { freeLocalPort } from './http-system.ts'
import type { ScaleOptions } from './options.ts'
import { postgresServerTicks, readProcStat } from './proc-cpu.ts'
import { readValue } from './scale-probes.ts'
import { burstStageFigures, profileEnv } from './cpu-profile.ts'
import { percentile } from './stats.ts'

/** One database per bench process, so two benches on one server never share one. */
export const SCALE_DATABASE = `baton_bench_scale_${process.pid}`
const HANG_PROMPT = '{"hang":true}'
/** Delegations per batch request while ramping, and batch requests in flight. */
const RAMP_BATCH = 200
const RAMP_CLIENTS = 4
/** Calls in flight when the bench cancels many children "at once". */
const CANCEL_CLIENTS = 256
const WAIT_BOUND_MS = 60_000
/**
 * How long each process may take to start: the API and the workers load at once, and on a small
 * machine already busy that alone can take longer than a test's bound.
 */
const START_TIMEOUT_MS = 180_000

export interface ScaleStack {
  readonly client: BatonClient
  readonly baseUrl: string
  readonly adminKey: string
  readonly api: AppProcess
  readonly workers: readonly AppProcess[]
  /** Each worker's `GET /metrics`. */
  readonly workerMetricsUrls: readonly string[]
  readonly databaseUrl: string
  /** The bench's reads of the ledger (its transactions are the bench's, not Baton's). */
  readonly pool: pg.Pool
  /** The bench's own Redis server (the one the stack uses). */
  readonly redis: BenchContext['redis']
  /** The bench context's processes (its Redis server, the Postgres server). */
  readonly bench: Pick<BenchContext, 'redisPid' | 'postgres'>
  /** Hanging children that run now, oldest first. */
  readonly running: string[]
}

/** Runs `use` on a fresh stack sized for `options`; stops it and drops its database after. */
export async function withScaleStack<T>(
  bench: BenchContext,
  options: ScaleOptions,
  use: (stack: ScaleStack) => Promise<T>,
): Promise<T> {
  const databaseUrl = withDatabase(bench.serverUrl, SCALE_DATABASE)
  await prepareDatabase(databaseUrl, { fresh: true })
  const apiKey = await issueDefaultKey(databaseUrl, 'bench-scale')
  const adminKey = `bench-admin-${'x'.repeat(32)}`
  const port = await freeLocalPort()
  const highest = Math.max(...options.levels, options.cancels)
  const env = {
    DATABASE_URL: databaseUrl,
    REDIS_URL: bench.redisUrl,
    QUEUE_PREFIX: 'baton-bench-scale',
    PORT: String(port),
    ADMIN_API_KEY: adminKey,
    LOG_LEVEL: 'info',
    // Room for every level's children plus the history's submit-and-waits.
    WORKER_CONCURRENCY: String(Math.min(10_000, Math.ceil(highest / options.workers) + 100)),
    ...profileEnv(),
  }
  const metricsPorts = await Promise.all(Array.from({ length: options.workers }, freeLocalPort))
  const api = spawnApp(
    'api',
    { ...env, METRICS_PORT: '0' },
    { name: 'baton-api', outputLimit: 20_000, timeoutMs: START_TIMEOUT_MS },
  )
  const workers = metricsPorts.map((metricsPort, i) =>
    spawnApp(
      'worker',
      { ...env, METRICS_PORT: String(metricsPort) },
      { name: `baton-worker-${i + 1}`, outputLimit: 20_000, timeoutMs: START_TIMEOUT_MS },
    ),
  )
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 2 })
  const baseUrl = `http://127.0.0.1:${port}`
  try {
    await Promise.all([api, ...workers].map((p) => p.ready))
    return await use({
      client: createBatonClient({ baseUrl, apiKey }),
      baseUrl,
      adminKey,
      api,
      workers,
      workerMetricsUrls: metricsPorts.map((p) => `http://127.0.0.1:${p}/metrics`),
      databaseUrl,
      pool,
      redis: bench.redis,
      bench,
      running: [],
    })
  } catch (error) {
    // What the processes said last is the first thing to read when a measurement fails.
    for (const p of [api, ...workers])
      console.error(`bench: last output of ${p.name}:\n${p.output().slice(-4_000)}`)
    throw error
  } finally {
    await Promise.all([api, ...workers].map((p) => p.close()))
    await pool.end()
    await dropDatabase(databaseUrl)
    await bench.redis.flushall()
  }
}

/** Runs `task` over `items` with at most `clients` in flight. */
export async function inParallel<I>(
  items: readonly I[],
  clients: number,
  task: (item: I) => Promise<void>,
): Promise<void> {
  let next = 0
  await Promise.all(
    Array.from({ length: Math.min(clients, items.length) }, async () => {
      while (next < items.length) await task(items[next++] as I)
    }),
  )
}

/**
 * Starts hanging children until `level` run, and waits until the ledger says they all do. A child
 * the bench started that no longer runs (its lease lost while the machine was saturated, say) is
 * forgotten first and replaced, so a level always measures children that run.
 */
export async function rampTo(stack: ScaleStack, level: number): Promise<void> {
  if (stack.running.length > 0) {
    const { rows } = await stack.pool.query<{ id: string }>(
      `select id from attempts where id = any($1::uuid[]) and status = 'running'`,
      [stack.running],
    )
    const still = new Set(rows.map((r) => r.id))
    const ended = stack.running.length - still.size
    if (ended > 0) {
      console.error(`bench: ${ended} children the bench started no longer run; replacing them`)
      stack.running.splice(0, stack.running.length, ...stack.running.filter((id) => still.has(id)))
    }
  }
  const missing = level - stack.running.length
  if (missing > 0) {
    const batches = Array.from({ length: Math.ceil(missing / RAMP_BATCH) }, (_, b) =>
      Math.min(RAMP_BATCH, missing - b * RAMP_BATCH),
    )
    let session = 0
    await inParallel(batches, RAMP_CLIENTS, async (size) => {
      const sessionId = `bench-scale-${session++}`
      const answer = await stack.client.delegateBatch(
        sessionId,
        Array.from({ length: size }, () => ({ name: 'scripted', prompt: HANG_PROMPT })),
        { timeoutMs: 60_000 },
      )
      for (const r of answer.results) {
        if (r.status !== 202 || !('attemptId' in r.body))
          throw new Error(`a delegation was refused: ${JSON.stringify(r.body)}`)
        stack.running.push(r.body.attemptId)
      }
    })
  }
  const deadline = Date.now() + 300_000
  for (;;) {
    const r = await stack.pool.query<{ n: number }>(
      `select count(*)::int as n from attempts where status = 'running'`,
    )
    if ((r.rows[0]?.n ?? 0) >= level) return
    if (Date.now() > deadline) throw new Error(`${r.rows[0]?.n} of ${level} children ran`)
    await sleep(250)
  }
}

/**
 * Cancels one child. A `503` (the ledger did not answer in time; the cancel may not have been
 * recorded) is retried, as a caller would: a cancel is idempotent. The time counts in its figure.
 */
export async function cancelOne(stack: ScaleStack, id: string): Promise<void> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      await stack.client.cancel(id, 'bench', { timeoutMs: 60_000 })
      return
    } catch (error) {
      const status = (error as { status?: unknown }).status
      if (status !== 503 || attempt >= 5) throw error
    }
  }
}

/** Answered waits: per attempt, the client's clock at the answer and the terminal time. */
export interface WaitAnswers {
  readonly answeredAt: Map<string, number>
  readonly terminalAt: Map<string, number>
  /** Children that ended otherwise than `aborted`. */
  readonly notAborted: string[]
}

/**
 * One bounded wait. A connection the API closed as the client reused it (an idle keep-alive
 * socket) is a `fetch failed` before any answer: the wait is a read, so it is opened again, as a
 * caller would.
 */
async function waitOnce(stack: ScaleStack, id: string) {
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await stack.client.wait(id, WAIT_BOUND_MS, { timeoutMs: WAIT_BOUND_MS + 30_000 })
    } catch (error) {
      if (!(error instanceof TypeError) || attempt >= 3) throw error
    }
  }
}

/** Opens one bounded wait per attempt (all at once); each must answer a terminal `aborted`. */
export function openWaits(
  stack: ScaleStack,
  ids: readonly string[],
): { answers: WaitAnswers; done: Promise<void> } {
  const answers: WaitAnswers = { answeredAt: new Map(), terminalAt: new Map(), notAborted: [] }
  const done = Promise.all(
    ids.map(async (id) => {
      const view = await waitOnce(stack, id)
      answers.answeredAt.set(id, Date.now())
      if (!isTerminalView(view))
        throw new Error(`a wait on a cancelled child answered ${view.status} at its bound`)
      // Ended otherwise than aborted (its lease lost before the cancel, say): counted, not timed.
      if (view.stopReason !== 'aborted') answers.notAborted.push(id)
      else answers.terminalAt.set(id, Date.parse(view.terminalAt))
    }),
  ).then(() => undefined)
  done.catch(() => undefined)
  return { answers, done }
}

/** The API's `GET /metrics` (an admin route). */
export async function scrapeApi(stack: ScaleStack): Promise<string> {
  const answer = await fetch(`${stack.baseUrl}/metrics`, { headers: adminHeaders(stack) })
  const text = await answer.text()
  if (!answer.ok) throw new Error(`the API's /metrics answered ${answer.status}: ${text}`)
  return text
}

export const adminHeaders = (stack: ScaleStack) => ({ authorization: `Bearer ${stack.adminKey}` })

/** Waits until the API holds at least `n` open waits (its `baton_open_waits`). */
export async function untilWaitsOpen(stack: ScaleStack, n: number): Promise<void> {
  const deadline = Date.now() + 300_000
  for (;;) {
    const open = readValue(await scrapeApi(stack), 'baton_open_waits')
    if (open >= n) return
    if (Date.now() > deadline) throw new Error(`only ${open} of ${n} waits opened`)
    await sleep(100)
  }
}

/**
 * Cancels `ids` at once (many calls in flight), each with a wait already open on it (`whileOpen`
 * runs once they all are): cancel sent
 * → that wait's answer, ms, and commit (terminal time) → answer, ms, of those that ended
 * `aborted`; and how many ended otherwise.
 */
export async function cancelAtOnce(
  stack: ScaleStack,
  ids: readonly string[],
  whileOpen?: () => Promise<void>,
): Promise<{ cancel: number[]; commit: number[]; notAborted: number }> {
  const { answers, done } = openWaits(stack, ids)
  // A wait that fails (refused, cut) ends the measurement with its reason, not a timeout later.
  await Promise.race([
    untilWaitsOpen(stack, ids.length),
    done.then(() => {
      throw new Error('every wait answered before any cancel was sent')
    }),
  ])
  await whileOpen?.()
  const sentAt = new Map<string, number>()
  // With the profiling switch on, the burst also says what it cost and where its time went.
  const profiling = profileEnv().NODE_OPTIONS !== undefined
  const countersBefore = profiling ? await burstCounters(stack) : undefined
  const burstFrom = process.hrtime.bigint()
  const burstFromWall = Date.now()
  await inParallel(ids, CANCEL_CLIENTS, async (id) => {
    sentAt.set(id, Date.now())
    await cancelOne(stack, id)
  })
  await done
  if (countersBefore !== undefined) {
    // The monotonic clock is the one a CPU profile's timestamps count in (µs), so these bounds
    // select the burst's samples out of a whole run's profile.
    console.error(
      `bench: cancel burst of ${ids.length} monotonic_us ${burstFrom / 1000n} ${process.hrtime.bigint() / 1000n} wall_ms ${burstFromWall} ${Date.now()}`,
    )
    // CPU is read as the last wait answered; the statistics collector publishes a backend's
    // counts up to a second after its commit, so those are read a little later.
    const atDone = await burstCounters(stack)
    await sleep(2_000)
    const later = await burstCounters(stack)
    const after = Object.fromEntries(
      Object.entries(atDone).map(([k, v]) => [k, k.startsWith('pg_') ? (later[k] ?? v) : v]),
    )
    const delta = Object.fromEntries(
      Object.entries(after)
        .map(([k, v]) => [k, v - (countersBefore[k] ?? 0)] as const)
        .filter(([, v]) => v !== 0),
    )
    console.error(`bench: cancel burst counters ${JSON.stringify(delta)}`)
    console.error(
      `bench: cancel burst stages ${JSON.stringify(await burstStages(stack, ids, sentAt, answers))}`,
    )
  }
  const gone = new Set(ids)
  stack.running.splice(0, stack.running.length, ...stack.running.filter((id) => !gone.has(id)))
  const aborted = ids.filter((id) => answers.terminalAt.has(id))
  const ms = (from: Map<string, number>) =>
    aborted
      .map((id) => (answers.answeredAt.get(id) ?? 0) - (from.get(id) ?? 0))
      .sort((a, b) => a - b)
  return {
    cancel: ms(sentAt),
    commit: ms(answers.terminalAt),
    notAborted: answers.notAborted.length,
  }
}

/**
 * The stack database's transaction and row counts and the Redis server's calls per command, to
 * see how many statements and commands a burst costs per item.
 */
async function burstCounters(stack: ScaleStack): Promise<Record<string, number>> {
  const { rows } = await stack.pool.query<Record<string, string>>(
    `select xact_commit, xact_rollback, tup_inserted, tup_updated, tup_deleted, tup_fetched
       from pg_stat_database where datname = current_database()`,
  )
  const counters: Record<string, number> = {}
  for (const [k, v] of Object.entries(rows[0] ?? {})) counters[`pg_${k}`] = Number(v)
  // CPU ticks (1/100 s) of each process the burst runs on, and of the whole machine.
  const ticks = (pid: number) => readProcStat(pid)?.ticks ?? 0
  counters.cpu_ticks_api = ticks(stack.api.pid)
  stack.workers.forEach((w, i) => (counters[`cpu_ticks_worker_${i + 1}`] = ticks(w.pid)))
  counters.cpu_ticks_bench = ticks(process.pid)
  counters.cpu_ticks_redis = ticks(stack.bench.redisPid)
  counters.cpu_ticks_postgres = [
    ...postgresServerTicks(stack.bench.postgres.postmasterPid).values(),
  ].reduce((a, b) => a + b, 0)
  const machine = (readFileSync('/proc/stat', 'utf8').split('\n')[0] ?? '').split(/\s+/).slice(1)
  // user nice system idle iowait irq softirq steal: busy is all but idle and iowait.
  counters.cpu_ticks_machine_busy = machine
    .slice(0, 8)
    .reduce((sum, v, i) => (i === 3 || i === 4 ? sum : sum + Number(v)), 0)
  for (const line of (await stack.redis.info('commandstats')).split('\n')) {
    const m = /^cmdstat_(\w+):calls=(\d+)/.exec(line)
    if (m) counters[`redis_${m[1]}`] = Number(m[2])
  }
  return counters
}

/**
 * Where a burst's time went, per attempt, by the ledger's own times (this machine's clock, like
 * the bench's): cancel sent → request recorded → terminal committed → wait answered, each as
 * p50/p99 ms over the attempts that ended `aborted`. Both ledger times are their statement's
 * transaction start (`now()`), so a statement's own run counts in the stage after it.
 */
async function burstStages(
  stack: ScaleStack,
  ids: readonly string[],
  sentAt: ReadonlyMap<string, number>,
  answers: WaitAnswers,
): Promise<Record<string, number>> {
  const { rows } = await stack.pool.query<{ id: string; requested: number; ended: number }>(
    `select id, extract(epoch from cancel_requested_at) * 1000 as requested,
            extract(epoch from terminal_at) * 1000 as ended
       from attempts where id = any($1::uuid[]) and stop_reason = 'aborted'`,
    [ids],
  )
  return burstStageFigures(
    rows.map((r) => ({ id: r.id, requested: Number(r.requested), ended: Number(r.ended) })),
    sentAt,
    answers.answeredAt,
  )
}

export const p = (sorted: readonly number[], q: number): number =>
  Math.round(percentile(sorted, q) * 10) / 10
