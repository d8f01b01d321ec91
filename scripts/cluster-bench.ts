// `npm run bench:cluster`: what partitioning buys, and what a failover costs, on this machine. Each
// phase runs one API and two workers on a fresh database of the local Postgres (DATABASE_URL's
// server) and prints one JSON line:
//   - `throughput`: delegations per second with the queue in one partition on one private Redis,
//     then in 8 partitions on a private Redis Cluster (3 masters, 3 replicas), with each master's
//     share of the masters' CPU time during the load and the load average around both;
//   - `failover`: under load (--clients clients) on the cluster, the busiest master is killed
//     (SIGKILL); its replica takes over. Once with Baton's failover retry settings, once with the
//     client library's own (REDIS_CLUSTER_RETRY=client): how long until every attempt ended, the
//     ledger audit, and how often the processes logged each kind of Redis error.
// Options: --count N (delegations per throughput phase, default 2000), --clients N (default 32),
// --phases throughput,failover (default both).
import { randomUUID } from 'node:crypto'
import { availableParallelism, loadavg } from 'node:os'
import { setTimeout as sleep } from 'node:timers/promises'
import { parseArgs } from 'node:util'
import pg from 'pg'
import { createBatonClient } from '@baton/client'
import { createDb } from '@baton/store'
import { auditLedger } from '@baton/testing/ledger-audit'
import { spawnApp, type AppProcess } from '@baton/testing/processes'
import { startRedisCluster, type RedisClusterServers } from '@baton/testing/redis-cluster'
import { startRedisServer } from '@baton/testing/redis-server'
import { freeLocalPort } from './lib/bench/http-system.ts'
import { submitAll } from './lib/bench/http-load.ts'
import { processTicks } from './lib/bench/proc-cpu.ts'
import {
  DEFAULT_DATABASE_URL,
  dropDatabase,
  issueDefaultKey,
  prepareDatabase,
  withDatabase,
} from './lib/services.ts'

const { values } = parseArgs({
  options: {
    count: { type: 'string', default: '2000' },
    clients: { type: 'string', default: '32' },
    phases: { type: 'string', default: 'throughput,failover' },
  },
})
const PHASES = new Set(values.phases.split(','))
const COUNT = Number(values.count)
const CLIENTS = Number(values.clients)
const PARTITIONS = 8
/** A process on the cluster connects every partition's readers before it is ready. */
const READY_TIMEOUT_MS = 120_000
const serverUrl = process.env.DATABASE_URL ?? DEFAULT_DATABASE_URL
const ATTEMPTS_LEDGER = {
  table: 'attempts',
  finished: 'terminal',
  finishedAt: 'terminal_at',
} as const

/** Redis errors the processes log, by the words that name them. */
const ERROR_KINDS = {
  // The API's words for an add to the queue that failed (left to the reconciler).
  failed_adds: 'enqueue failed after accept',
  too_many_redirections: 'Too many Cluster redirections',
  clusterdown: 'CLUSTERDOWN',
  crossslot: 'CROSSSLOT',
  connection_closed: 'Connection is closed',
  command_timed_out: 'Command timed out',
  failed_to_refresh_slots: 'Failed to refresh slots cache',
} as const
type ErrorKind = keyof typeof ERROR_KINDS

interface Stack {
  readonly client: ReturnType<typeof createBatonClient>
  readonly databaseUrl: string
  readonly errors: Map<ErrorKind, number>
  readonly processes: readonly AppProcess[]
}

/** One API and two workers on a fresh database, counting the Redis errors they print. */
async function withStack<T>(
  name: string,
  redisEnv: Record<string, string>,
  use: (stack: Stack) => Promise<T>,
): Promise<T> {
  const databaseUrl = withDatabase(serverUrl, `baton_bench_cluster_${name}_${process.pid}`)
  await prepareDatabase(databaseUrl, { fresh: true })
  const apiKey = await issueDefaultKey(databaseUrl, 'bench-cluster')
  const port = await freeLocalPort()
  const errors = new Map<ErrorKind, number>()
  const count = (chunk: Buffer): void => {
    const text = chunk.toString()
    for (const [kind, words] of Object.entries(ERROR_KINDS) as [ErrorKind, string][]) {
      const n = text.split(words).length - 1
      if (n > 0) errors.set(kind, (errors.get(kind) ?? 0) + n)
    }
  }
  const env = {
    DATABASE_URL: databaseUrl,
    QUEUE_PREFIX: `baton-bench-cluster-${name}`,
    PORT: String(port),
    METRICS_PORT: '0',
    WORKER_CONCURRENCY: '100',
    // The apps say they are ready at `info` (log-level.ts): a quieter level never starts them.
    LOG_LEVEL: 'info',
    ...redisEnv,
  }
  // A start takes seconds; on a machine shared with other work, far more.
  const launch = { onOutput: count, timeoutMs: READY_TIMEOUT_MS }
  const processes = [
    spawnApp('api', env, { name: 'api', ...launch }),
    spawnApp('worker', env, { name: 'worker-1', ...launch }),
    spawnApp('worker', env, { name: 'worker-2', ...launch }),
  ]
  try {
    await Promise.all(processes.map((p) => p.ready))
    const client = createBatonClient({ baseUrl: `http://127.0.0.1:${port}`, apiKey })
    return await use({ client, databaseUrl, errors, processes })
  } finally {
    await Promise.all(processes.map((p) => p.close()))
    await dropDatabase(databaseUrl)
  }
}

const say = (line: Record<string, unknown>): void => {
  process.stdout.write(`${JSON.stringify(line)}\n`)
}

/** Delegations per second with the queue in one partition on one private Redis. */
async function throughputOneRedis(): Promise<number> {
  const redis = await startRedisServer()
  try {
    return await withStack('k1', { REDIS_URL: redis.url }, async (stack) => {
      const { perSecond } = await submitAll(
        stack.client,
        { count: COUNT, clients: CLIENTS },
        [],
        stack.databaseUrl,
        ATTEMPTS_LEDGER,
      )
      return perSecond
    })
  } finally {
    await redis.close()
  }
}

const clusterEnv = (cluster: RedisClusterServers, retry: 'failover' | 'client') => ({
  REDIS_CLUSTER_NODES: cluster.nodeList,
  QUEUE_PARTITIONS: String(PARTITIONS),
  REDIS_CLUSTER_RETRY: retry,
})

/**
 * Delegations per second with the queue in PARTITIONS partitions on a private Redis Cluster, and
 * each master's share of the masters' CPU time (/proc/<pid>/stat) during the load.
 */
async function throughputCluster(): Promise<{ perSecond: number; shares: number[] }> {
  const cluster = await startRedisCluster()
  try {
    return await withStack('k8', clusterEnv(cluster, 'failover'), async (stack) => {
      const masters = await cluster.masters()
      const pids = masters.map((m) => m.server.pid() ?? 0)
      const before = pids.map((pid) => processTicks([pid]))
      const { perSecond } = await submitAll(
        stack.client,
        { count: COUNT, clients: CLIENTS },
        [],
        stack.databaseUrl,
        ATTEMPTS_LEDGER,
      )
      const used = pids.map((pid, i) => processTicks([pid]) - (before[i] ?? 0))
      const total = Math.max(
        1,
        used.reduce((a, b) => a + b, 0),
      )
      return { perSecond, shares: used.map((u) => u / total) }
    })
  } finally {
    await cluster.close()
  }
}

/**
 * One line for both throughput phases: K=8 on the cluster against K=1 on one Redis, and the
 * machine's load average before and after (a shared machine's figures need it beside them).
 */
async function throughput(): Promise<void> {
  const loadBefore = loadavg()
  const k1 = await throughputOneRedis()
  const k8 = await throughputCluster()
  const round = (n: number) => Number(n.toFixed(3))
  const hottest = Math.max(...k8.shares)
  say({
    phase: 'throughput',
    count: COUNT,
    clients: CLIENTS,
    k1_one_redis_per_s: Math.round(k1),
    k8_cluster_per_s: Math.round(k8.perSecond),
    k8_over_k1: round(k8.perSecond / k1),
    master_cpu_shares: k8.shares.map(round),
    hottest_master_share: round(hottest),
    // The issue's floor on a 2-core machine: no collapse, and no master doing all the work.
    no_collapse: k8.perSecond >= 0.6 * k1 && hottest <= 0.5,
    loadavg_before: loadBefore.map(round),
    loadavg_after: loadavg().map(round),
    cores: availableParallelism(),
  })
}

async function failover(retry: 'failover' | 'client'): Promise<void> {
  const cluster = await startRedisCluster()
  try {
    await withStack(`fo_${retry}`, clusterEnv(cluster, retry), async (stack) => {
      const accepted: string[] = []
      let refused = 0
      let submitting = true
      // --clients concurrent clients, each one delegation at a time.
      const client = async (c: number): Promise<void> => {
        for (let i = 0; submitting; i += 1) {
          try {
            const answer = await stack.client.delegate(
              {
                sessionId: `failover-${c}-${i % 8}`,
                name: 'scripted',
                prompt: JSON.stringify({ output: randomUUID(), delayMs: 500 }),
              },
              { timeoutMs: 15_000 },
            )
            accepted.push(answer.attemptId)
          } catch {
            refused += 1
          }
          await sleep(10)
        }
      }
      const load = Promise.all(Array.from({ length: CLIENTS }, (_, c) => client(c)))
      await sleep(5_000)
      const busiest = await cluster.busiestMaster('*')
      const replica = await cluster.replicaOf(busiest.server)
      const killedAt = Date.now()
      await busiest.server.crash()
      await cluster.waitHealthy(60_000)
      const promotedMs = Date.now() - killedAt
      const promoted = (await cluster.masters()).some((m) => m.server === replica)
      await sleep(5_000)
      submitting = false
      await load
      const pool = new pg.Pool({ connectionString: stack.databaseUrl, max: 1 })
      let open = -1
      try {
        const deadline = Date.now() + 120_000
        while (Date.now() < deadline) {
          const r = await pool.query<{ open: number }>(
            `select count(*)::int as open from attempts where status <> 'terminal'`,
          )
          open = r.rows[0]?.open ?? -1
          if (open === 0) break
          await sleep(100)
        }
      } finally {
        await pool.end()
      }
      const allEndedMs = Date.now() - killedAt
      const db = createDb({
        connectionString: stack.databaseUrl,
        maxConnections: 1,
      })
      try {
        const audit = await auditLedger(db, accepted)
        say({
          phase: 'failover',
          retry,
          partitions: PARTITIONS,
          accepted: accepted.length,
          refused,
          promoted,
          promoted_ms: promotedMs,
          open_after_2_min: open,
          all_ended_ms: open === 0 ? allEndedMs : null,
          lost: audit.lost,
          stuck: audit.stuck,
          duplicate_terminal: audit.duplicate_terminal,
          duplicate_execution: audit.duplicate_execution,
          errors: Object.fromEntries(stack.errors),
        })
      } finally {
        await db.destroy()
      }
    })
  } finally {
    await cluster.close()
  }
}

if (PHASES.has('throughput')) await throughput()
if (PHASES.has('failover')) {
  await failover('failover')
  await failover('client')
}
