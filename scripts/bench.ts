// `npm run bench [-- --json] [--count N] [--clients N] [--sequential N] [--keyed]`
//
// Measures Baton against raw BullMQ on the same Redis and Postgres, in one run:
//   (a) raw BullMQ: add + process of no-op jobs (throughput);
//   (b) Baton: durable delegations of a no-op `scripted` child through the HTTP API to terminal
//       commit, from many concurrent clients (throughput, from the ledger's own timestamps);
//   (c) sequential submit-and-wait latency for both (BullMQ waitUntilFinished; HTTP `wait`).
// `lost` and `duplicates` are the shared ledger audit (@baton/testing/ledger-audit) over the
// benchmark's own database. With `--keyed` every delegation of (b) carries its own
// `Idempotency-Key`, as a client that retries safely sends.
import { randomUUID } from 'node:crypto'
import { parseArgs } from 'node:util'
import { Queue, QueueEvents, Worker } from 'bullmq'
import { Redis } from 'ioredis'
import { sql } from 'kysely'
import { createBatonClient } from '@baton/client'
import { createDb } from '@baton/store'
import { auditLedger } from '@baton/testing/ledger-audit'
import {
  DEFAULT_DATABASE_URL,
  DEFAULT_REDIS_URL,
  prepareDatabase,
  startService,
  withDatabase,
} from './lib/services.ts'

const { values: args } = parseArgs({
  options: {
    json: { type: 'boolean', default: false },
    count: { type: 'string', default: '20000' },
    clients: { type: 'string', default: '64' },
    sequential: { type: 'string', default: '300' },
    workers: { type: 'string', default: '2' },
    keyed: { type: 'boolean', default: false },
  },
})
const COUNT = Number(args.count)
const CLIENTS = Number(args.clients)
const SEQUENTIAL = Number(args.sequential)
const WORKERS = Number(args.workers)
const redisUrl = process.env.REDIS_URL ?? DEFAULT_REDIS_URL
const databaseUrl = withDatabase(process.env.DATABASE_URL ?? DEFAULT_DATABASE_URL, 'baton_bench')
const log = (line: string): void => {
  if (!args.json) console.log(line)
  else console.error(line)
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return 0
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0
}
const round = (n: number, digits = 2): number => Number(n.toFixed(digits))

async function rawBullmq(prefix: string) {
  const connection = new Redis(redisUrl, { maxRetriesPerRequest: null })
  const queue = new Queue('raw', {
    connection,
    prefix,
    defaultJobOptions: { removeOnComplete: true },
  })
  let done = 0
  let finish: () => void = () => {}
  const allDone = new Promise<void>((resolve) => (finish = resolve))
  const worker = new Worker(
    'raw',
    async () => {
      done += 1
      if (done === COUNT) finish()
    },
    { connection: new Redis(redisUrl, { maxRetriesPerRequest: null }), prefix, concurrency: 100 },
  )
  await worker.waitUntilReady()
  const started = performance.now()
  for (let i = 0; i < COUNT; i += 1000) {
    const n = Math.min(1000, COUNT - i)
    await queue.addBulk(Array.from({ length: n }, (_, k) => ({ name: 'noop', data: { i: i + k } })))
  }
  await allDone
  const perSecond = COUNT / ((performance.now() - started) / 1000)

  // Sequential add + waitUntilFinished.
  const events = new QueueEvents('raw', { connection: { url: redisUrl }, prefix })
  await events.waitUntilReady()
  const latencies: number[] = []
  for (let i = 0; i < SEQUENTIAL; i += 1) {
    const t = performance.now()
    const job = await queue.add('noop', { seq: i }, { removeOnComplete: false })
    await job.waitUntilFinished(events, 10_000)
    latencies.push(performance.now() - t)
  }
  latencies.sort((a, b) => a - b)
  await events.close()
  await worker.close()
  await queue.obliterate({ force: true })
  await queue.close()
  connection.disconnect()
  return { perSecond, p50: percentile(latencies, 50), p99: percentile(latencies, 99) }
}

async function baton(port: number) {
  // Node's fetch keeps connections alive per origin; CLIENTS concurrent calls use CLIENTS sockets.
  const client = createBatonClient({ baseUrl: `http://127.0.0.1:${port}` })
  const db = createDb({
    connectionString: databaseUrl,
    maxConnections: 2,
    applicationName: 'baton-bench',
  })
  const prompt = '{"output":"ok"}'
  const accepted: string[] = []
  let next = 0
  let rejected = 0
  const started = performance.now()
  await Promise.all(
    Array.from({ length: CLIENTS }, async () => {
      for (;;) {
        const i = next++
        if (i >= COUNT) return
        try {
          const answer = await client.delegate(
            { sessionId: `bench-${i % 100}`, name: 'scripted', prompt },
            { timeoutMs: 15_000, ...(args.keyed ? { idempotencyKey: `bench-${i}` } : {}) },
          )
          accepted.push(answer.attemptId)
        } catch {
          rejected += 1
        }
      }
    }),
  )
  const submitSeconds = (performance.now() - started) / 1000
  // Wait for quiescence (benchmark tooling reading the ledger, not a product code path).
  const deadline = Date.now() + 120_000
  for (;;) {
    const r = await sql<{
      open: number
    }>`select count(*)::int as open from attempts where status <> 'terminal'`.execute(db)
    if ((r.rows[0]?.open ?? 0) === 0 || Date.now() > deadline) break
    await new Promise((res) => setTimeout(res, 100))
  }
  const span = await sql<{ seconds: number; n: number }>`
    select extract(epoch from max(terminal_at) - min(created_at))::float8 as seconds, count(*)::int as n
    from attempts where status = 'terminal'
  `.execute(db)
  const seconds = span.rows[0]?.seconds ?? submitSeconds
  const perSecond = (span.rows[0]?.n ?? 0) / seconds

  const latencies: number[] = []
  for (let i = 0; i < SEQUENTIAL; i += 1) {
    const t = performance.now()
    try {
      const view = await client.delegateAndWait(
        { sessionId: 'bench-seq', name: 'scripted', prompt },
        10_000,
        { timeoutMs: 15_000 },
      )
      accepted.push(view.attemptId)
    } catch {
      rejected += 1
    }
    latencies.push(performance.now() - t)
  }
  latencies.sort((a, b) => a - b)

  const audit = await auditLedger(db, accepted)
  const total = await sql<{ n: number }>`select count(*)::int as n from attempts`.execute(db)
  await db.destroy()
  return {
    perSecond,
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
    rejected,
    lost: audit.lost,
    duplicates: audit.duplicates,
    total: total.rows[0]?.n ?? 0,
  }
}

async function main(): Promise<void> {
  await prepareDatabase(databaseUrl, { fresh: true })
  const prefix = `baton-bench-${randomUUID().slice(0, 8)}`
  log(
    `bench: ${COUNT} jobs/delegations, ${CLIENTS} HTTP clients${args.keyed ? ' (keyed)' : ''}, ${SEQUENTIAL} sequential waits, ${WORKERS} workers`,
  )
  log('bench: (a) raw BullMQ …')
  const raw = await rawBullmq(`${prefix}-raw`)

  const port = 3900 + Math.floor(Math.random() * 90)
  const env = {
    DATABASE_URL: databaseUrl,
    REDIS_URL: redisUrl,
    QUEUE_PREFIX: prefix,
    LOG_LEVEL: 'info',
    PORT: String(port),
    WORKER_CONCURRENCY: '100',
  }
  const services = [await startService('api', 'api', env)]
  for (let i = 0; i < WORKERS; i += 1)
    services.push(await startService(`worker-${i + 1}`, 'worker', env))
  let result
  try {
    log('bench: (b, c) Baton through HTTP …')
    result = await baton(port)
  } finally {
    for (const s of services.reverse()) await s.stop()
    const redis = new Redis(redisUrl)
    const keys = await redis.keys(`${prefix}:*`)
    for (let i = 0; i < keys.length; i += 1000) await redis.del(...keys.slice(i, i + 1000))
    redis.disconnect()
  }
  const summary = {
    raw_bullmq_per_s: round(raw.perSecond, 0),
    baton_per_s: round(result.perSecond, 0),
    ratio: round(result.perSecond / raw.perSecond, 3),
    raw_wait_p50_ms: round(raw.p50),
    raw_wait_p99_ms: round(raw.p99),
    baton_wait_p50_ms: round(result.p50),
    baton_wait_p99_ms: round(result.p99),
    lost: result.lost,
    duplicates: result.duplicates,
  }
  log('')
  log('| measure                         | raw BullMQ | Baton |')
  log('|---------------------------------|-----------:|------:|')
  log(`| throughput (per second)         | ${summary.raw_bullmq_per_s} | ${summary.baton_per_s} |`)
  log(
    `| sequential submit-and-wait p50  | ${summary.raw_wait_p50_ms} ms | ${summary.baton_wait_p50_ms} ms |`,
  )
  log(
    `| sequential submit-and-wait p99  | ${summary.raw_wait_p99_ms} ms | ${summary.baton_wait_p99_ms} ms |`,
  )
  log(
    `ratio ${summary.ratio}; lost ${summary.lost}; duplicates ${summary.duplicates}; rejected ${result.rejected}; rows ${result.total}`,
  )
  if (args.json) console.log(JSON.stringify(summary))
}

await main()
// Library handles (ioredis reconnect timers, pg pools in child code paths) must not keep a finished
// benchmark alive.
process.exit(0)
