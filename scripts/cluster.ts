// `npm run cluster`: Baton at scale on this machine — a Redis Cluster of its own (3 masters, 3
// replicas); a Postgres primary of its own with a streaming standby (`pg_basebackup -R`) and
// PgBouncer in transaction mode in front of the primary; two APIs and two workers with the attempt
// queue in QUEUE_PARTITIONS (default 8) partitions. The APIs and workers reach the ledger through
// PgBouncer; the dashboard's reads go to the standby (DATABASE_READ_URL); migrations connect to the
// primary directly. The APIs and workers are supervised: one that exits unexpectedly is restarted.
// Ctrl-C stops everything it started. Each part prints a `cluster: ready` line when it answers.
import { randomBytes, randomUUID } from 'node:crypto'
import { rmSync } from 'node:fs'
import { hostname } from 'node:os'
import { join } from 'node:path'
import { freeLocalPort } from './lib/bench/http-system.ts'
import { apiAddress } from '@baton/testing/processes'
import { startRedisCluster, type RedisClusterServers } from '@baton/testing/redis-cluster'
import { devDirectory, errorText, safeUrl } from './lib/dev-service.ts'
import { ensurePostgres } from './lib/dev-postgres.ts'
import { startStandby } from './lib/pg-standby.ts'
import { startPgBouncer } from './lib/pgbouncer.ts'
import {
  REPO_ROOT,
  issueDefaultKey,
  prepareDatabase,
  startService,
  withDatabase,
} from './lib/services.ts'
import { createSupervisor } from './lib/supervisor.ts'

const APIS = 2
const WORKERS = 2
const DATABASE = 'baton_cluster'
const STOP_GRACE_MS = 20_000 // above the worker's default SHUTDOWN_DEADLINE_MS (10 s)

const say = (line = ''): void => {
  process.stdout.write(`${line}\n`)
}

const partitions = process.env.QUEUE_PARTITIONS ?? '8'
/** The first API's port (the second takes the next); 0: each API picks a free one. */
const firstPort = Number(process.env.PORT ?? '3000')
/** The primary's, the standby's and PgBouncer's data, configuration and logs (kept between runs). */
const clusterDir = join(devDirectory(process.env, REPO_ROOT), 'cluster')
let stopping = false
let redis: RedisClusterServers | undefined
/** What stops the Postgres side, in the order it was started (stopped in reverse). */
const postgresStops: (() => Promise<void>)[] = []
const supervisor = createSupervisor(say, () => stopping)

async function stopAll(exitCode: number): Promise<never> {
  stopping = true
  const running = supervisor.running()
  if (running.length > 0) say(`cluster: stopping ${running.join(', ')} …`)
  await supervisor.stop(STOP_GRACE_MS)
  if (redis !== undefined) {
    say('cluster: stopping the Redis Cluster …')
    await redis.close()
  }
  if (postgresStops.length > 0) say('cluster: stopping PgBouncer, the standby and the primary …')
  for (const stop of postgresStops.reverse()) {
    await stop().catch((error: unknown) => say(`cluster: ${errorText(error)}`))
  }
  say(exitCode === 0 ? 'cluster: stopped.' : 'cluster: stopped after a failure.')
  process.exit(exitCode)
}

process.on('SIGINT', () => void stopAll(0))
process.on('SIGTERM', () => void stopAll(0))

interface LedgerUrls {
  /** The primary, directly: migrations and the API key (their advisory lock is a session's). */
  readonly direct: string
  /** The primary through PgBouncer: what the APIs and workers use. */
  readonly pooled: string
  /** The standby: the dashboard's reads. */
  readonly standby: string
}

/**
 * The ledger's Postgres side, each part started after the one it needs: a primary of cluster's
 * own on a free port (one that answers replication connections, which a shared server may not),
 * its standby, then PgBouncer in front of the primary.
 */
async function ledgerDatabase(): Promise<LedgerUrls> {
  const primaryPort = await freeLocalPort()
  const primaryUrl = `postgres://postgres@127.0.0.1:${primaryPort}/postgres`
  const primary = await ensurePostgres(primaryUrl, join(clusterDir, 'primary'), process.env, (l) =>
    say(`cluster: ${l}`),
  )
  const server = primary.server
  if (server === undefined) throw new Error(`something else answers on port ${primaryPort}`)
  postgresStops.push(() => server.stop())
  say(`cluster: ready postgres primary 127.0.0.1:${primaryPort} (pid ${String(server.pid)})`)
  const direct = withDatabase(primaryUrl, DATABASE)
  say(`cluster: migrating ${safeUrl(direct)} …`)
  await prepareDatabase(direct)

  const standbyPort = await freeLocalPort()
  say('cluster: copying the primary into a streaming standby (pg_basebackup -R) …')
  const standby = await startStandby({
    primaryUrl,
    port: standbyPort,
    dir: join(clusterDir, 'standby'),
  })
  postgresStops.push(() => standby.stop())
  say(
    `cluster: ready postgres standby 127.0.0.1:${standbyPort} (pid ${String(standby.pid())}), streaming from the primary`,
  )

  const bouncerDir = join(clusterDir, 'pgbouncer')
  rmSync(bouncerDir, { recursive: true, force: true })
  const bouncer = await startPgBouncer({
    port: await freeLocalPort(),
    upstream: { host: '127.0.0.1', port: primaryPort },
    dir: bouncerDir,
  })
  postgresStops.push(() => bouncer.stop())
  say(
    `cluster: ready pgbouncer 127.0.0.1:${bouncer.port} (pid ${String(bouncer.pid)}), transaction mode, in front of the primary`,
  )
  return { direct, pooled: bouncer.url(DATABASE), standby: standby.url(DATABASE) }
}

try {
  say('cluster: starting a Redis Cluster (3 masters, 3 replicas) …')
  redis = await startRedisCluster()
  const masters = await redis.masters()
  for (const node of redis.nodes) {
    const master = masters.find((m) => m.server === node)
    const role =
      master === undefined
        ? 'replica'
        : `master, slots ${master.slots.map(([a, b]) => `${a}-${b}`).join(' ')}`
    say(`cluster: ready redis 127.0.0.1:${node.port} (pid ${String(node.pid())}), ${role}`)
  }
} catch (error) {
  say(`cluster: the Redis Cluster did not start: ${errorText(error)}`)
  await stopAll(1)
}
let ledger: LedgerUrls = { direct: '', pooled: '', standby: '' }
try {
  ledger = await ledgerDatabase()
} catch (error) {
  say(`cluster: the ledger's Postgres did not start: ${errorText(error)}`)
  await stopAll(1)
}
const apiKey = await issueDefaultKey(ledger.direct, `cluster-${randomUUID().slice(0, 8)}`)
const adminKey = process.env.ADMIN_API_KEY ?? randomBytes(24).toString('base64url')

const env: Record<string, string> = {
  DATABASE_URL: ledger.pooled,
  // PgBouncer in transaction mode cannot keep a connection's prepared statements.
  DB_PREPARED_STATEMENTS: 'false',
  DATABASE_READ_URL: ledger.standby,
  REDIS_CLUSTER_NODES: redis?.nodeList ?? '',
  QUEUE_PARTITIONS: partitions,
  HOST: '127.0.0.1',
  ADMIN_API_KEY: adminKey,
}
const apiUrls: string[] = []
const specs = [
  ...Array.from({ length: APIS }, (_, i) => ({
    name: `api-${i + 1}`,
    start: async () => {
      const port = firstPort === 0 ? '0' : String(firstPort + i)
      const service = await startService(`api-${i + 1}`, 'api', { ...env, PORT: port })
      const address = apiAddress(service)
      apiUrls[i] = address
      say(`cluster: ready api-${i + 1} ${address} (pid ${String(service.child.pid)})`)
      return service
    },
  })),
  ...Array.from({ length: WORKERS }, (_, i) => ({
    name: `worker-${i + 1}`,
    start: async () => {
      const workerId = `${hostname()}-cluster-${i + 1}-${randomUUID().slice(0, 8)}`
      const service = await startService(`worker-${i + 1}`, 'worker', {
        ...env,
        WORKER_ID: workerId,
        METRICS_PORT: '0',
      })
      say(
        `cluster: ready worker-${i + 1} (pid ${String(service.child.pid)}, WORKER_ID ${workerId})`,
      )
      return service
    },
  })),
]
for (const spec of specs) {
  if (stopping) break
  try {
    await supervisor.add(spec)
  } catch (error) {
    say(`cluster: ${spec.name} did not start: ${errorText(error)}`)
    await stopAll(1)
  }
}

say('')
say(
  `Baton runs at scale: ${APIS} APIs and ${WORKERS} workers, ${partitions} queue partitions on a Redis Cluster.`,
)
say(`  APIs                 ${apiUrls.join(' ')}`)
say(`  REDIS_CLUSTER_NODES  ${env.REDIS_CLUSTER_NODES ?? ''}`)
say(`  DATABASE_URL         ${safeUrl(ledger.pooled)} (PgBouncer)`)
say(`  DATABASE_READ_URL    ${safeUrl(ledger.standby)} (the standby: dashboard reads)`)
say(`  Primary, directly    ${safeUrl(ledger.direct)} (migrations)`)
say(`  API key (namespace default)  ${apiKey}`)
say(`  Admin key                    ${adminKey}`)
say('A process that exits unexpectedly is restarted. Ctrl-C stops everything.')
say('cluster: ready')
