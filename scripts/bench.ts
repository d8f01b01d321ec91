// `npm run bench [-- --json] [--count N] [--clients N] [--sequential N] [--workers N] [--keyed]
//   [--cancels N] [--burst N] [--baseline-ms N] [--ledger-batch N]`
//
// Measures, in one run, on one private Redis and the same Postgres server, these systems:
//   (a) raw BullMQ: add + process of no-op jobs in this process (no HTTP, no ledger), added in
//       bulk; and after (b), (a') raw BullMQ fed one job per add at the rate Baton reached, and
//       (a") raw BullMQ fed Baton's own arrivals (its accept batches, at their times, held as long);
//   (n) the hand-rolled service (scripts/lib/bench/naive-*.ts): Fastify + BullMQ + Postgres,
//       an API process and `--workers` worker processes, driven by the same client and load as Baton;
//   (f) the queue floor (scripts/lib/bench/floor-*.ts): the same processes, route and load on
//       Fastify + BullMQ alone, no database — the part of Baton's work no design on them avoids —
//       and its cancels: a bell to the workers and the job's `failed` event, nothing recorded;
//   (fl) the queue floor with Baton's ledger (scripts/lib/bench/floor-with-ledger.ts): the same
//       processes, with Baton's accept, claim and commit statements where Baton makes them, and
//       nothing else of Baton's — the floor of Baton's design, its ledger statements as they are;
//   (fb) the queue floor with the bare ledger (scripts/lib/bench/floor-bare-ledger.ts): the same
//       processes, with one bare insert, fenced claim and fenced terminal update on a table with
//       nothing but its key — the least any design that keeps Baton's three durable steps writes;
//   (fr) the queue floor with the required ledger (scripts/lib/bench/floor-required-ledger.ts):
//       those three statements also writing, in their plainest form, the records Baton's design
//       requires (agent rows, the transition audit, the fingerprint, the partial indexes);
//   (l) Baton's ledger alone (scripts/lib/bench/ledger-alone.ts): its accept, claim and commit
//       statements for as many delegations, called from this process `--ledger-batch` at a time;
//   (b) Baton: durable delegations of a no-op `scripted` child through the HTTP API to terminal
//       commit, from many concurrent clients (throughput, from the ledger's own timestamps);
// Before the hand-rolled service starts, it times one durable write and one read on the idle server.
// And for each: sequential submit-and-wait latency, and the cost of the throughput phase per
// delegation (CPU of every process involved, Redis commands, Postgres transactions). Then the
// cancellation latency of Baton and of the queue floor, one cancel at a time and in a burst.
// `lost` and `duplicates` are the shared ledger audit (@baton/testing/ledger-audit) over Baton's
// database. With `--keyed` every delegation carries its own `Idempotency-Key`.
import { randomUUID } from 'node:crypto'
import { parseArgs } from 'node:util'
import { setTimeout as sleep } from 'node:timers/promises'
import { Queue, QueueEvents, Worker } from 'bullmq'
import { Redis } from 'ioredis'
import pg from 'pg'
import { createBatonClient } from '@baton/client'
import { createDb, issueApiKey } from '@baton/store'
import { auditLedger } from '@baton/testing/ledger-audit'
import { startRedisServer } from '@baton/testing/redis-server'
import { arrivalBatches, meanBatchSize, type ArrivalBatch } from './lib/bench/arrivals.ts'
import { batonLedger, ledgerTimes } from './lib/bench/baton-ledger.ts'
import { floorLedger, startFloorService } from './lib/bench/floor.ts'
import {
  auditPlainLedger,
  plainLedgerReader,
  plainLedgerTimes,
  preparePlainLedgerDatabase,
} from './lib/bench/floor-bare.ts'
import { PLAIN_LEDGERS } from './lib/bench/floor-required-ledger.ts'
import { runLedgerAlone } from './lib/bench/ledger-alone.ts'
import { measureCancels, type CancelFigures } from './lib/bench/cancel.ts'
import {
  connectPostgresCounters,
  measurePhase,
  postgresIdleRate,
  redisProcessId,
  type MeasuredSystem,
  type PhaseCost,
  type PostgresCounters,
} from './lib/bench/counters.ts'
import {
  perSecond,
  sequentialWaits,
  submitAll,
  UNCHECKED_KEY,
  type LedgerReader,
  type LoadSizes,
} from './lib/bench/http-load.ts'
import {
  naiveLedger,
  naiveLedgerTimes,
  prepareNaiveDatabase,
  startNaiveService,
} from './lib/bench/naive.ts'
import { databaseRoundTrips } from './lib/bench/round-trips.ts'
import { percentile, round } from './lib/bench/stats.ts'
import { waitSteps, type LedgerTimes, type TimedCall } from './lib/bench/wait-steps.ts'
import {
  DEFAULT_DATABASE_URL,
  databaseName,
  prepareDatabase,
  startService,
  withDatabase,
  type RunningService,
} from './lib/services.ts'

const { values: args } = parseArgs({
  options: {
    json: { type: 'boolean', default: false },
    count: { type: 'string', default: '20000' },
    clients: { type: 'string', default: '64' },
    sequential: { type: 'string', default: '300' },
    workers: { type: 'string', default: '2' },
    keyed: { type: 'boolean', default: false },
    cancels: { type: 'string', default: '100' },
    burst: { type: 'string', default: '200' },
    'baseline-ms': { type: 'string', default: '5000' },
    'ledger-batch': { type: 'string', default: '100' },
  },
})
const SIZES: LoadSizes = {
  count: Number(args.count),
  clients: Number(args.clients),
  sequential: Number(args.sequential),
  keyed: args.keyed,
}
const WORKERS = Number(args.workers)
const CANCELS = Number(args.cancels)
const BURST = Number(args.burst)
const BASELINE_MS = Number(args['baseline-ms'])
const LEDGER_BATCH = Number(args['ledger-batch'])
// Every child of the burst must run at once: the workers together need a slot for each.
const WORKER_CONCURRENCY = Math.max(100, Math.ceil(BURST / WORKERS))
const serverUrl = process.env.DATABASE_URL ?? DEFAULT_DATABASE_URL
const batonDatabaseUrl = withDatabase(serverUrl, 'baton_bench')
const naiveDatabaseUrl = withDatabase(serverUrl, 'baton_bench_naive')
const ledgerDatabaseUrl = withDatabase(serverUrl, 'baton_bench_ledger')
const floorLedgerDatabaseUrl = withDatabase(serverUrl, 'baton_bench_floor_ledger')
const log = (line: string): void => {
  if (!args.json) console.log(line)
  else console.error(line)
}
const randomPort = (): number => 3900 + Math.floor(Math.random() * 90)

/** What the bench holds for the whole run: the private Redis and the counters' connections. */
interface Bench {
  readonly redisUrl: string
  readonly redis: Redis
  readonly redisPid: number
  readonly postgres: PostgresCounters
}

interface HttpFigures {
  readonly perSecond: number
  readonly p50: number
  readonly p99: number
  readonly rejected: number
  readonly cost: PhaseCost
  readonly postgresIdleMsPerS: number
  /** The answered sequential submit-and-waits, with when each was sent and answered. */
  readonly calls: readonly TimedCall[]
  /** The attempts the throughput phase accepted. */
  readonly throughputIds: readonly string[]
}

/**
 * A queue of no-op jobs in this process with `workers` workers of `concurrency` each; `allDone`
 * resolves when `count` jobs have run. A job whose data has `holdMs` is held that long before it
 * completes. Raw BullMQ's producer and workers are this process, and it uses no Postgres: `system`
 * is what its phases measure.
 */
async function noopQueue(
  bench: Bench,
  prefix: string,
  name: string,
  workers: number,
  concurrency: number,
  count = SIZES.count,
) {
  const connection = new Redis(bench.redisUrl, { maxRetriesPerRequest: null })
  const queue = new Queue(name, {
    connection,
    prefix,
    defaultJobOptions: { removeOnComplete: true },
  })
  let done = 0
  let finish: () => void = () => {}
  const allDone = new Promise<void>((resolve) => (finish = resolve))
  const running = Array.from(
    { length: workers },
    () =>
      new Worker(
        name,
        async (job: { data: { holdMs?: unknown } }) => {
          const hold = job.data.holdMs
          if (typeof hold === 'number' && hold > 0) await sleep(hold)
          done += 1
          if (done === count) finish()
        },
        {
          connection: new Redis(bench.redisUrl, { maxRetriesPerRequest: null }),
          prefix,
          concurrency,
        },
      ),
  )
  await Promise.all(running.map((w) => w.waitUntilReady()))
  const system: MeasuredSystem = {
    nodePids: [process.pid],
    redis: bench.redis,
    redisPid: bench.redisPid,
  }
  const close = async (): Promise<void> => {
    await Promise.all(running.map((w) => w.close()))
    await queue.obliterate({ force: true })
    await queue.close()
    connection.disconnect()
  }
  return { queue, allDone, system, close }
}

async function rawBullmq(bench: Bench, prefix: string) {
  const { queue, allDone, system, close } = await noopQueue(bench, prefix, 'raw', 1, 100)
  const { result: perSecond, cost } = await measurePhase(system, 0, async () => {
    const started = performance.now()
    for (let i = 0; i < SIZES.count; i += 1000) {
      const n = Math.min(1000, SIZES.count - i)
      await queue.addBulk(
        Array.from({ length: n }, (_, k) => ({ name: 'noop', data: { i: i + k } })),
      )
    }
    await allDone
    return SIZES.count / ((performance.now() - started) / 1000)
  })

  // Sequential add + waitUntilFinished.
  const events = new QueueEvents('raw', { connection: { url: bench.redisUrl }, prefix })
  await events.waitUntilReady()
  const latencies: number[] = []
  for (let i = 0; i < SIZES.sequential; i += 1) {
    const t = performance.now()
    const job = await queue.add('noop', { seq: i }, { removeOnComplete: false })
    await job.waitUntilFinished(events, 10_000)
    latencies.push(performance.now() - t)
  }
  latencies.sort((a, b) => a - b)
  await events.close()
  await close()
  return { perSecond, p50: percentile(latencies, 50), p99: percentile(latencies, 99), cost }
}

/**
 * Raw BullMQ fed at `rate` jobs per second, one job per add, by the HTTP systems' `--workers`
 * workers and concurrency (in this process; no HTTP, no ledger): what BullMQ alone costs per job
 * when jobs arrive as fast as Baton took them, not preloaded. A worker that has just taken a job
 * tries at once to take another and, with no backlog, finds none; phase (a) never pays that.
 */
async function rawBullmqAtRate(bench: Bench, prefix: string, rate: number) {
  const { queue, allDone, system, close } = await noopQueue(
    bench,
    prefix,
    'raw-paced',
    WORKERS,
    WORKER_CONCURRENCY,
  )
  const { cost } = await measurePhase(system, 0, async () => {
    const started = performance.now()
    let added = 0
    while (added < SIZES.count) {
      // Every job due by now, each its own add, all in flight together.
      const due = Math.min(SIZES.count, Math.floor(((performance.now() - started) / 1000) * rate))
      const adds: Promise<unknown>[] = []
      for (; added < due; added += 1) adds.push(queue.add('noop', { i: added }))
      await Promise.all(adds)
      await sleep(1)
    }
    await allDone
  })
  await close()
  return { cost }
}

/**
 * Raw BullMQ fed Baton's own arrivals (scripts/lib/bench/arrivals.ts): each accept statement's
 * delegations added together at the moment, after the first, that the statement began, one
 * `addBulk` in flight as in Baton's API (arrivals due meanwhile leave together in the next), job
 * ids minted by the caller as Baton's are, and each job held as long as Baton's worker held it,
 * by the same workers and concurrency. What BullMQ alone spends on the jobs Baton gave it.
 */
async function rawBullmqReplay(bench: Bench, prefix: string, batches: readonly ArrivalBatch[]) {
  const count = batches.reduce((n, b) => n + b.holdMs.length, 0)
  const { queue, allDone, system, close } = await noopQueue(
    bench,
    prefix,
    'raw-replay',
    WORKERS,
    WORKER_CONCURRENCY,
    count,
  )
  const { cost } = await measurePhase(system, 0, async () => {
    const started = performance.now()
    let next = 0
    while (next < batches.length) {
      const elapsed = performance.now() - started
      const jobs = []
      for (; next < batches.length && (batches[next]?.atMs ?? 0) <= elapsed; next += 1) {
        for (const holdMs of batches[next]?.holdMs ?? []) {
          jobs.push({ name: 'noop', data: { holdMs }, opts: { jobId: randomUUID() } })
        }
      }
      if (jobs.length > 0) await queue.addBulk(jobs)
      else await sleep(1)
    }
    await allDone
  })
  await close()
  return { cost, count }
}

/**
 * The same HTTP load against Baton or the hand-rolled service, whose processes `start` launches
 * after the Postgres server's idle rate was taken (so the system's own idle work is its cost).
 */
async function httpSystem(
  bench: Bench,
  databaseUrl: string | undefined,
  start: () => Promise<RunningService[]>,
  ledger: LedgerReader,
  port: number,
  apiKey: string,
  accepted: string[],
  after: (client: ReturnType<typeof createBatonClient>) => Promise<void> = async () => {},
): Promise<HttpFigures> {
  const database = databaseUrl === undefined ? undefined : databaseName(databaseUrl)
  const postgresIdleMsPerMs =
    database === undefined ? 0 : await postgresIdleRate(bench.postgres, database, BASELINE_MS)
  const services = await start()
  try {
    const client = createBatonClient({ baseUrl: `http://127.0.0.1:${port}`, apiKey })
    const system: MeasuredSystem = {
      nodePids: services.map((s) => s.pid),
      redis: bench.redis,
      redisPid: bench.redisPid,
      ...(database === undefined ? {} : { postgres: { counters: bench.postgres, database } }),
    }
    const { result: submitted, cost } = await measurePhase(
      system,
      postgresIdleMsPerMs,
      () => submitAll(client, SIZES, accepted, ledger),
      () => ledger.queries,
    )
    const throughputIds = [...accepted]
    const rate = await perSecond(ledger)
    const waits = await sequentialWaits(client, SIZES, accepted)
    await after(client)
    return {
      perSecond: rate,
      p50: percentile(waits.latencies, 50),
      p99: percentile(waits.latencies, 99),
      rejected: submitted.rejected + waits.rejected,
      cost,
      postgresIdleMsPerS: postgresIdleMsPerMs * 1000,
      calls: waits.calls,
      throughputIds,
    }
  } finally {
    for (const s of services.reverse()) await s.stop()
  }
}

/** The steps of a system's answered waits, split at the times its own ledger recorded. */
async function stepsOf(
  calls: readonly TimedCall[],
  timesOf: (ids: readonly string[]) => Promise<ReadonlyMap<string, LedgerTimes>>,
) {
  return waitSteps(calls, await timesOf(calls.map((c) => c.attemptId)))
}

/** The environment of an HTTP system's processes: the bench's Redis, its queue prefix and port. */
function serviceEnv(
  bench: Bench,
  prefix: string,
  port: number,
  databaseUrl?: string,
): Record<string, string> {
  return {
    ...(databaseUrl === undefined ? {} : { DATABASE_URL: databaseUrl }),
    REDIS_URL: bench.redisUrl,
    QUEUE_PREFIX: prefix,
    PORT: String(port),
    WORKER_CONCURRENCY: String(WORKER_CONCURRENCY),
  }
}

/** The bench's own connection to a Baton ledger (its audit, its reads of times and spans). */
function ledgerReaderDb(url: string) {
  return createDb({ connectionString: url, maxConnections: 2, applicationName: 'baton-bench' })
}

async function naive(bench: Bench, prefix: string) {
  await prepareNaiveDatabase(naiveDatabaseUrl)
  // Before any system runs: the machine's own cost of one database write and read.
  const roundTrips = await databaseRoundTrips(naiveDatabaseUrl, SIZES.sequential)
  const port = randomPort()
  const env = serviceEnv(bench, prefix, port, naiveDatabaseUrl)
  const pool = new pg.Pool({ connectionString: naiveDatabaseUrl, max: 2 })
  try {
    const figures = await httpSystem(
      bench,
      naiveDatabaseUrl,
      () => startNaiveService(env, WORKERS),
      naiveLedger(pool),
      port,
      UNCHECKED_KEY,
      [],
    )
    const steps = await stepsOf(figures.calls, (ids) => naiveLedgerTimes(pool, ids))
    return { ...figures, roundTrips, steps }
  } finally {
    await pool.end()
  }
}

async function floor(bench: Bench, prefix: string) {
  const port = randomPort()
  const env = serviceEnv(bench, prefix, port)
  let cancels: CancelFigures | undefined
  let burst: CancelFigures | undefined
  const figures = await httpSystem(
    bench,
    undefined,
    () => startFloorService(env, WORKERS),
    floorLedger(bench.redis, prefix),
    port,
    UNCHECKED_KEY,
    [],
    async (client) => {
      log(`bench: (f) queue floor cancels, ${CANCELS} one at a time, then ${BURST} at once …`)
      cancels = await measureCancels(client, CANCELS, false, [])
      burst = await measureCancels(client, BURST, true, [])
    },
  )
  return { ...figures, cancels, burst }
}

/** A ledger the queue floor writes, and the bench's reads of it. */
interface FloorLedgerReads {
  readonly databaseUrl: string
  /** The floor processes' environment beyond the bench's (which ledger they write). */
  readonly env?: Record<string, string>
  readonly reader: LedgerReader
  audit(ids: readonly string[]): Promise<{ lost: number; duplicates: number }>
  times(ids: readonly string[]): Promise<ReadonlyMap<string, LedgerTimes>>
}

/** The queue floor writing `ledger` on a database of its own (no cancels), audited. */
async function floorWith(bench: Bench, prefix: string, what: string, ledger: FloorLedgerReads) {
  const port = randomPort()
  const env = { ...serviceEnv(bench, prefix, port, ledger.databaseUrl), ...ledger.env }
  const accepted: string[] = []
  const figures = await httpSystem(
    bench,
    ledger.databaseUrl,
    () => startFloorService(env, WORKERS),
    ledger.reader,
    port,
    UNCHECKED_KEY,
    accepted,
  )
  const audit = await ledger.audit(accepted)
  if (audit.lost + audit.duplicates > 0)
    throw new Error(`the floor with ${what} lost ${audit.lost}, doubled ${audit.duplicates}`)
  return { ...figures, steps: await stepsOf(figures.calls, (ids) => ledger.times(ids)) }
}

/** The queue floor making Baton's ledger statements (Baton's core). */
async function floorWithLedger(bench: Bench, prefix: string) {
  await prepareDatabase(floorLedgerDatabaseUrl, { fresh: true })
  const db = ledgerReaderDb(floorLedgerDatabaseUrl)
  try {
    return await floorWith(bench, prefix, "Baton's ledger", {
      databaseUrl: floorLedgerDatabaseUrl,
      reader: batonLedger(db),
      audit: (ids) => auditLedger(db, ids),
      times: (ids) => ledgerTimes(db, ids),
    })
  } finally {
    await db.destroy()
  }
}

/**
 * The queue floor writing a plain ledger: the least three writes that keep Baton's durable steps
 * (`bare`, floor-bare-ledger.ts), or those writes with the records Baton's design requires
 * (`required`, floor-required-ledger.ts).
 */
async function floorWithPlainLedger(bench: Bench, prefix: string, kind: 'bare' | 'required') {
  const databaseUrl = withDatabase(serverUrl, `baton_bench_floor_${kind}`)
  await preparePlainLedgerDatabase(databaseUrl, PLAIN_LEDGERS[kind])
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 2 })
  try {
    return await floorWith(bench, prefix, `the ${kind} ledger`, {
      databaseUrl,
      env: { FLOOR_LEDGER: kind },
      reader: plainLedgerReader(pool),
      audit: (ids) => auditPlainLedger(pool, ids),
      times: (ids) => plainLedgerTimes(pool, ids),
    })
  } finally {
    await pool.end()
  }
}

/** The figures of the queue floor with a ledger, under the summary's field names for `system`. */
function floorLedgerFields<S extends string>(
  system: S,
  figures: Awaited<ReturnType<typeof floorWith>>,
  cost: ReturnType<typeof perUnit>,
): Record<`${S}_${FloorLedgerField}`, number> {
  const fields: Record<FloorLedgerField, number> = {
    per_s: round(figures.perSecond, 0),
    wait_p50_ms: round(figures.p50),
    wait_p99_ms: round(figures.p99),
    wait_to_accept_p50_ms: round(figures.steps.toAcceptMs),
    wait_accept_to_claim_p50_ms: round(figures.steps.acceptToClaimMs ?? 0),
    wait_claim_to_commit_p50_ms: round(figures.steps.claimToCommitMs ?? 0),
    wait_commit_to_answer_p50_ms: round(figures.steps.commitToAnswerMs),
    cpu_ms_per_delegation: cost.cpuMs,
    pg_xacts_per_delegation: cost.pgTransactions,
    machine_busy: cost.machineBusy,
  }
  return Object.fromEntries(
    Object.entries(fields).map(([field, value]) => [`${system}_${field}`, value]),
  ) as Record<`${S}_${FloorLedgerField}`, number>
}

type FloorLedgerField =
  | 'per_s'
  | 'wait_p50_ms'
  | 'wait_p99_ms'
  | 'wait_to_accept_p50_ms'
  | 'wait_accept_to_claim_p50_ms'
  | 'wait_claim_to_commit_p50_ms'
  | 'wait_commit_to_answer_p50_ms'
  | 'cpu_ms_per_delegation'
  | 'pg_xacts_per_delegation'
  | 'machine_busy'

/** The human line of the queue floor with a ledger (`system` as in `floorLedgerFields`). */
function floorLedgerLine(
  title: string,
  s: Record<`${string}_${FloorLedgerField}`, number>,
  system: string,
  steps: readonly [accept: string, claim: string, commit: string],
): string {
  const f = (field: FloorLedgerField) => s[`${system}_${field}`]
  const [accept, claim, commit] = steps
  return `${title}: ${f('per_s')} per second, submit-and-wait p50 ${f('wait_p50_ms')} ms, p99 ${f('wait_p99_ms')} ms; ${f('cpu_ms_per_delegation')} ms CPU, ${f('pg_xacts_per_delegation')} transactions per delegation; machine busy ${f('machine_busy')}; request → ${accept} ${f('wait_to_accept_p50_ms')} ms, ${accept} → ${claim} ${f('wait_accept_to_claim_p50_ms')} ms, ${claim} → ${commit} ${f('wait_claim_to_commit_p50_ms')} ms, ${commit} → answer ${f('wait_commit_to_answer_p50_ms')} ms`
}

/** Baton's ledger statements alone, on a database of their own, measured like the systems. */
async function ledgerAlone(bench: Bench) {
  await prepareDatabase(ledgerDatabaseUrl, { fresh: true })
  const database = databaseName(ledgerDatabaseUrl)
  const db = createDb({
    connectionString: ledgerDatabaseUrl,
    maxConnections: 1,
    applicationName: 'baton-bench-ledger',
  })
  try {
    const postgresIdleMsPerMs = await postgresIdleRate(bench.postgres, database, BASELINE_MS)
    const system: MeasuredSystem = {
      nodePids: [process.pid],
      redis: bench.redis,
      redisPid: bench.redisPid,
      postgres: { counters: bench.postgres, database },
    }
    const { result, cost } = await measurePhase(system, postgresIdleMsPerMs, () =>
      runLedgerAlone(db, SIZES.count, LEDGER_BATCH),
    )
    if (result.refused > 0) throw new Error(`the ledger alone refused ${result.refused} items`)
    return { cost }
  } finally {
    await db.destroy()
  }
}

async function baton(bench: Bench, prefix: string) {
  await prepareDatabase(batonDatabaseUrl, { fresh: true })
  const port = randomPort()
  const env = { ...serviceEnv(bench, prefix, port, batonDatabaseUrl), LOG_LEVEL: 'info' }
  const db = ledgerReaderDb(batonDatabaseUrl)
  const issued = await issueApiKey(db, { namespaceId: 'default', name: 'bench' })
  if (issued === undefined) throw new Error('the bench database has no default namespace')
  const accepted: string[] = []
  let cancels: Awaited<ReturnType<typeof measureCancels>> | undefined
  let burst: Awaited<ReturnType<typeof measureCancels>> | undefined
  try {
    const figures = await httpSystem(
      bench,
      batonDatabaseUrl,
      async () => {
        const services = [await startService('api', 'api', env)]
        for (let i = 0; i < WORKERS; i += 1)
          services.push(await startService(`worker-${i + 1}`, 'worker', env))
        return services
      },
      batonLedger(db),
      port,
      issued.key,
      accepted,
      async (client) => {
        log(`bench: (b) Baton cancels, ${CANCELS} one at a time, then ${BURST} at once …`)
        cancels = await measureCancels(client, CANCELS, false, accepted)
        burst = await measureCancels(client, BURST, true, accepted)
      },
    )
    const audit = await auditLedger(db, accepted)
    const steps = await stepsOf(figures.calls, (ids) => ledgerTimes(db, ids))
    const arrivals = arrivalBatches((await ledgerTimes(db, figures.throughputIds)).values())
    return {
      ...figures,
      lost: audit.lost,
      duplicates: audit.duplicates,
      cancels,
      burst,
      steps,
      arrivals,
    }
  } finally {
    await db.destroy()
  }
}

function perUnit(cost: PhaseCost, units: number) {
  const per = (n: number, digits = 3) => round(n / units, digits)
  return {
    cpuMs: per(cost.cpuMs),
    nodeCpuMs: per(cost.nodeCpuMs),
    redisCpuMs: per(cost.redisCpuMs),
    postgresCpuMs: per(cost.postgresCpuMs),
    redisCommands: per(cost.redisCommands, 2),
    pgTransactions: per(cost.pgTransactions),
    machineBusy: round(cost.machineBusy, 2),
    /** Every Redis command of the phase, most frequent first, per unit: `xadd 4.04, hmget 3.03, …`. */
    redisCommandsTop: [...cost.redisCommandsByName]
      .sort((a, b) => b[1] - a[1])
      .map(([name, calls]) => `${name} ${per(calls, 2)}`)
      .filter((entry) => !entry.endsWith(' 0'))
      .join(', '),
  }
}

async function main(): Promise<void> {
  log(
    `bench: ${SIZES.count} jobs/delegations, ${SIZES.clients} HTTP clients${SIZES.keyed ? ' (keyed)' : ''}, ${SIZES.sequential} sequential waits, ${WORKERS} workers`,
  )
  // A private Redis: its commands and CPU are the bench's alone, while the shared one serves
  // everyone else on this machine.
  const redisServer = await startRedisServer()
  const redis = new Redis(redisServer.url)
  const postgres = await connectPostgresCounters(serverUrl)
  const prefix = `baton-bench-${randomUUID().slice(0, 8)}`
  let raw, rawPaced, rawReplay, naiveFigures, floorFigures, floorLedgerFigures, ledgerFigures
  let floorBareFigures, floorRequiredFigures
  let batonFigures
  try {
    const bench: Bench = {
      redisUrl: redisServer.url,
      redis,
      redisPid: redisProcessId(await redis.info('server')),
      postgres,
    }
    log('bench: (a) raw BullMQ …')
    raw = await rawBullmq(bench, `${prefix}-raw`)
    log('bench: (n) hand-rolled Fastify + BullMQ + Postgres service through HTTP …')
    naiveFigures = await naive(bench, `${prefix}-naive`)
    log('bench: (f) the queue floor: Fastify + BullMQ, no database, through HTTP …')
    floorFigures = await floor(bench, `${prefix}-floor`)
    log("bench: (fl) the queue floor with Baton's ledger statements, through HTTP …")
    floorLedgerFigures = await floorWithLedger(bench, `${prefix}-floor-ledger`)
    log('bench: (fb) the queue floor with the bare ledger, three writes, through HTTP …')
    floorBareFigures = await floorWithPlainLedger(bench, `${prefix}-floor-bare`, 'bare')
    log(
      "bench: (fr) the queue floor with the required ledger, the design's records, through HTTP …",
    )
    floorRequiredFigures = await floorWithPlainLedger(bench, `${prefix}-floor-required`, 'required')
    log(`bench: (l) Baton's ledger alone, ${LEDGER_BATCH} delegations per statement …`)
    ledgerFigures = await ledgerAlone(bench)
    log('bench: (b) Baton through HTTP …')
    batonFigures = await baton(bench, prefix)
    log(`bench: (a') raw BullMQ at Baton's rate, ${round(batonFigures.perSecond, 0)} adds/s …`)
    rawPaced = await rawBullmqAtRate(bench, `${prefix}-raw-paced`, batonFigures.perSecond)
    log(
      `bench: (a") raw BullMQ fed Baton's arrivals, ${batonFigures.arrivals.length} batches of ${round(meanBatchSize(batonFigures.arrivals), 2)} …`,
    )
    rawReplay = await rawBullmqReplay(bench, `${prefix}-raw-replay`, batonFigures.arrivals)
  } finally {
    redis.disconnect()
    await postgres.admin.end()
    await redisServer.close()
  }
  const rawCost = perUnit(raw.cost, SIZES.count)
  const rawPacedCost = perUnit(rawPaced.cost, SIZES.count)
  const rawReplayCost = perUnit(rawReplay.cost, rawReplay.count)
  const naiveCost = perUnit(naiveFigures.cost, SIZES.count)
  const floorCost = perUnit(floorFigures.cost, SIZES.count)
  const batonCost = perUnit(batonFigures.cost, SIZES.count)
  const ledgerCost = perUnit(ledgerFigures.cost, SIZES.count)
  const floorLedgerCost = perUnit(floorLedgerFigures.cost, SIZES.count)
  const cancels = batonFigures.cancels?.latencies ?? []
  const burst = batonFigures.burst?.latencies ?? []
  const floorCancels = floorFigures.cancels?.latencies ?? []
  const floorBurst = floorFigures.burst?.latencies ?? []
  const summary = {
    raw_bullmq_per_s: round(raw.perSecond, 0),
    baton_per_s: round(batonFigures.perSecond, 0),
    ratio: round(batonFigures.perSecond / raw.perSecond, 3),
    raw_wait_p50_ms: round(raw.p50),
    raw_wait_p99_ms: round(raw.p99),
    baton_wait_p50_ms: round(batonFigures.p50),
    baton_wait_p99_ms: round(batonFigures.p99),
    baton_wait_to_accept_p50_ms: round(batonFigures.steps.toAcceptMs),
    baton_wait_accept_to_commit_p50_ms: round(batonFigures.steps.acceptToCommitMs),
    baton_wait_accept_to_claim_p50_ms: round(batonFigures.steps.acceptToClaimMs ?? 0),
    baton_wait_claim_to_commit_p50_ms: round(batonFigures.steps.claimToCommitMs ?? 0),
    baton_wait_commit_to_answer_p50_ms: round(batonFigures.steps.commitToAnswerMs),
    lost: batonFigures.lost,
    duplicates: batonFigures.duplicates,
    naive_per_s: round(naiveFigures.perSecond, 0),
    naive_wait_p50_ms: round(naiveFigures.p50),
    naive_wait_p99_ms: round(naiveFigures.p99),
    naive_wait_to_accept_p50_ms: round(naiveFigures.steps.toAcceptMs),
    naive_wait_accept_to_commit_p50_ms: round(naiveFigures.steps.acceptToCommitMs),
    naive_wait_commit_to_answer_p50_ms: round(naiveFigures.steps.commitToAnswerMs),
    cpu_ms_per_delegation: batonCost.cpuMs,
    node_cpu_ms_per_delegation: batonCost.nodeCpuMs,
    redis_cpu_ms_per_delegation: batonCost.redisCpuMs,
    pg_cpu_ms_per_delegation: batonCost.postgresCpuMs,
    pg_xacts_per_delegation: batonCost.pgTransactions,
    redis_commands_per_delegation: batonCost.redisCommands,
    pg_idle_cpu_ms_per_s: round(batonFigures.postgresIdleMsPerS, 1),
    raw_cpu_ms_per_job: rawCost.cpuMs,
    raw_node_cpu_ms_per_job: rawCost.nodeCpuMs,
    raw_redis_cpu_ms_per_job: rawCost.redisCpuMs,
    raw_redis_commands_per_job: rawCost.redisCommands,
    naive_cpu_ms_per_delegation: naiveCost.cpuMs,
    naive_node_cpu_ms_per_delegation: naiveCost.nodeCpuMs,
    naive_redis_cpu_ms_per_delegation: naiveCost.redisCpuMs,
    naive_pg_cpu_ms_per_delegation: naiveCost.postgresCpuMs,
    naive_pg_xacts_per_delegation: naiveCost.pgTransactions,
    naive_redis_commands_per_delegation: naiveCost.redisCommands,
    naive_pg_idle_cpu_ms_per_s: round(naiveFigures.postgresIdleMsPerS, 1),
    pg_write_p50_ms: round(naiveFigures.roundTrips.writeP50Ms, 3),
    pg_read_p50_ms: round(naiveFigures.roundTrips.readP50Ms, 3),
    floor_per_s: round(floorFigures.perSecond, 0),
    floor_wait_p50_ms: round(floorFigures.p50),
    floor_wait_p99_ms: round(floorFigures.p99),
    floor_cpu_ms_per_delegation: floorCost.cpuMs,
    floor_node_cpu_ms_per_delegation: floorCost.nodeCpuMs,
    floor_redis_cpu_ms_per_delegation: floorCost.redisCpuMs,
    floor_redis_commands_per_delegation: floorCost.redisCommands,
    floor_machine_busy: floorCost.machineBusy,
    ...floorLedgerFields('floor_ledger', floorLedgerFigures, floorLedgerCost),
    ...floorLedgerFields(
      'floor_bare',
      floorBareFigures,
      perUnit(floorBareFigures.cost, SIZES.count),
    ),
    ...floorLedgerFields(
      'floor_required',
      floorRequiredFigures,
      perUnit(floorRequiredFigures.cost, SIZES.count),
    ),
    ledger_cpu_ms_per_delegation: ledgerCost.cpuMs,
    ledger_node_cpu_ms_per_delegation: ledgerCost.nodeCpuMs,
    ledger_pg_cpu_ms_per_delegation: ledgerCost.postgresCpuMs,
    ledger_pg_xacts_per_delegation: ledgerCost.pgTransactions,
    raw_machine_busy: rawCost.machineBusy,
    raw_at_baton_rate_cpu_ms_per_job: rawPacedCost.cpuMs,
    raw_at_baton_rate_redis_commands_per_job: rawPacedCost.redisCommands,
    baton_accept_batch_mean: round(meanBatchSize(batonFigures.arrivals), 2),
    raw_at_baton_arrivals_cpu_ms_per_job: rawReplayCost.cpuMs,
    raw_at_baton_arrivals_redis_commands_per_job: rawReplayCost.redisCommands,
    naive_machine_busy: naiveCost.machineBusy,
    machine_busy: batonCost.machineBusy,
    cancel_p50_ms: round(percentile(cancels, 50)),
    cancel_p99_ms: round(percentile(cancels, 99)),
    cancel_burst_p50_ms: round(percentile(burst, 50)),
    cancel_burst_p99_ms: round(percentile(burst, 99)),
    cancel_not_aborted:
      (batonFigures.cancels?.notAborted ?? 0) + (batonFigures.burst?.notAborted ?? 0),
    floor_cancel_p50_ms: round(percentile(floorCancels, 50)),
    floor_cancel_p99_ms: round(percentile(floorCancels, 99)),
    floor_cancel_burst_p50_ms: round(percentile(floorBurst, 50)),
    floor_cancel_burst_p99_ms: round(percentile(floorBurst, 99)),
    floor_cancel_not_aborted:
      (floorFigures.cancels?.notAborted ?? 0) + (floorFigures.burst?.notAborted ?? 0),
  }
  const s = summary
  log('')
  const row = (measure: string, ...cells: (string | number)[]): void =>
    log(`| ${measure.padEnd(32)} | ${cells.join(' | ')} |`)
  row('measure (per delegation or job)', 'raw BullMQ', 'queue floor', 'hand-rolled', 'Baton')
  log(`|${'-'.repeat(34)}|-----------:|------------:|------------:|------:|`)
  row('throughput (per second)', s.raw_bullmq_per_s, s.floor_per_s, s.naive_per_s, s.baton_per_s)
  row(
    'sequential submit-and-wait p50',
    `${s.raw_wait_p50_ms} ms`,
    `${s.floor_wait_p50_ms} ms`,
    `${s.naive_wait_p50_ms} ms`,
    `${s.baton_wait_p50_ms} ms`,
  )
  row(
    'sequential submit-and-wait p99',
    `${s.raw_wait_p99_ms} ms`,
    `${s.floor_wait_p99_ms} ms`,
    `${s.naive_wait_p99_ms} ms`,
    `${s.baton_wait_p99_ms} ms`,
  )
  row(
    'CPU ms (Node / Redis / Postgres)',
    `${s.raw_cpu_ms_per_job} (${s.raw_node_cpu_ms_per_job} / ${s.raw_redis_cpu_ms_per_job} / -)`,
    `${s.floor_cpu_ms_per_delegation} (${s.floor_node_cpu_ms_per_delegation} / ${s.floor_redis_cpu_ms_per_delegation} / -)`,
    `${s.naive_cpu_ms_per_delegation} (${s.naive_node_cpu_ms_per_delegation} / ${s.naive_redis_cpu_ms_per_delegation} / ${s.naive_pg_cpu_ms_per_delegation})`,
    `${s.cpu_ms_per_delegation} (${s.node_cpu_ms_per_delegation} / ${s.redis_cpu_ms_per_delegation} / ${s.pg_cpu_ms_per_delegation})`,
  )
  row(
    'Redis commands',
    s.raw_redis_commands_per_job,
    s.floor_redis_commands_per_delegation,
    s.naive_redis_commands_per_delegation,
    s.redis_commands_per_delegation,
  )
  row('Postgres transactions', '-', '-', s.naive_pg_xacts_per_delegation, s.pg_xacts_per_delegation)
  row(
    'machine CPU busy (all cores)',
    s.raw_machine_busy,
    s.floor_machine_busy,
    s.naive_machine_busy,
    s.machine_busy,
  )
  log(
    floorLedgerLine("the queue floor with Baton's ledger statements", s, 'floor_ledger', [
      'accept',
      'claim',
      'commit',
    ]),
  )
  log(
    floorLedgerLine('the queue floor with the bare ledger (three bare writes)', s, 'floor_bare', [
      'insert',
      'claim',
      'commit',
    ]),
  )
  log(
    floorLedgerLine(
      "the queue floor with the required ledger (the design's records, plainly written)",
      s,
      'floor_required',
      ['accept', 'claim', 'commit'],
    ),
  )
  log(
    `one database step at rest: a durable one-row write ${s.pg_write_p50_ms} ms, a read by key ${s.pg_read_p50_ms} ms (p50)`,
  )
  log(
    `Baton's ledger alone (accept, claim, commit; ${LEDGER_BATCH} per statement): ${s.ledger_cpu_ms_per_delegation} ms CPU (Node ${s.ledger_node_cpu_ms_per_delegation}, Postgres ${s.ledger_pg_cpu_ms_per_delegation}), ${s.ledger_pg_xacts_per_delegation} transactions per delegation; with the queue floor ${round(s.floor_cpu_ms_per_delegation + s.ledger_cpu_ms_per_delegation, 3)} ms against Baton's ${s.cpu_ms_per_delegation}`,
  )
  log(
    `raw BullMQ fed at Baton's rate, one job per add: ${s.raw_at_baton_rate_cpu_ms_per_job} ms CPU, ${s.raw_at_baton_rate_redis_commands_per_job} Redis commands per job`,
  )
  log(
    `raw BullMQ fed Baton's arrivals (${rawReplay.count} jobs in ${batonFigures.arrivals.length} accept batches of ${s.baton_accept_batch_mean}, each held as long as Baton's worker held it): ${s.raw_at_baton_arrivals_cpu_ms_per_job} ms CPU, ${s.raw_at_baton_arrivals_redis_commands_per_job} Redis commands per job`,
  )
  log(
    `sequential submit-and-wait, p50 of each step (from the ledgers' statement start times): Baton request → accept ${s.baton_wait_to_accept_p50_ms} ms, accept → claim ${s.baton_wait_accept_to_claim_p50_ms} ms, claim → commit ${s.baton_wait_claim_to_commit_p50_ms} ms, commit → answer ${s.baton_wait_commit_to_answer_p50_ms} ms (${batonFigures.steps.calls} calls); hand-rolled request → insert ${s.naive_wait_to_accept_p50_ms} ms, insert → update ${s.naive_wait_accept_to_commit_p50_ms} ms, update → answer ${s.naive_wait_commit_to_answer_p50_ms} ms (${naiveFigures.steps.calls} calls)`,
  )
  log(`Redis commands by name, raw BullMQ: ${rawCost.redisCommandsTop}`)
  log(`Redis commands by name, raw BullMQ at Baton's rate: ${rawPacedCost.redisCommandsTop}`)
  log(`Redis commands by name, raw BullMQ fed Baton's arrivals: ${rawReplayCost.redisCommandsTop}`)
  log(`Redis commands by name, hand-rolled: ${naiveCost.redisCommandsTop}`)
  log(`Redis commands by name, queue floor: ${floorCost.redisCommandsTop}`)
  log(`Redis commands by name, Baton: ${batonCost.redisCommandsTop}`)
  log(
    `cancel → aborted: one at a time p50 ${s.cancel_p50_ms} ms, p99 ${s.cancel_p99_ms} ms; ${BURST} at once p50 ${s.cancel_burst_p50_ms} ms, p99 ${s.cancel_burst_p99_ms} ms; not aborted ${s.cancel_not_aborted}`,
  )
  log(
    `queue floor cancel → aborted: one at a time p50 ${s.floor_cancel_p50_ms} ms, p99 ${s.floor_cancel_p99_ms} ms; ${BURST} at once p50 ${s.floor_cancel_burst_p50_ms} ms, p99 ${s.floor_cancel_burst_p99_ms} ms; not aborted ${s.floor_cancel_not_aborted}`,
  )
  log(
    `ratio ${s.ratio}; lost ${s.lost}; duplicates ${s.duplicates}; rejected ${batonFigures.rejected} (hand-rolled ${naiveFigures.rejected}, floor ${floorFigures.rejected}, floor with the ledger ${floorLedgerFigures.rejected}, with the bare ledger ${floorBareFigures.rejected}, with the required ledger ${floorRequiredFigures.rejected}); Postgres idle ${s.pg_idle_cpu_ms_per_s} ms CPU/s subtracted`,
  )
  if (args.json) console.log(JSON.stringify(summary))
}

await main()
// Library handles (ioredis reconnect timers, pg pools in child code paths) must not keep a finished
// benchmark alive.
process.exit(0)
