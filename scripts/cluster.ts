// `npm run cluster`: Baton at scale on this machine — a Redis Cluster of its own (3 masters, 3
// replicas), the local Postgres (a database of its own, `baton_cluster`), two APIs and two workers
// with the attempt queue in QUEUE_PARTITIONS (default 8) partitions. The APIs and workers are
// supervised: one that exits unexpectedly is restarted. Ctrl-C stops everything it started.
import { randomBytes, randomUUID } from 'node:crypto'
import { hostname } from 'node:os'
import { startRedisCluster, type RedisClusterServers } from '@baton/testing/redis-cluster'
import { errorText, safeUrl } from './lib/dev-service.ts'
import {
  DEFAULT_DATABASE_URL,
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
const firstPort = Number(process.env.PORT ?? '3000')
let stopping = false
let redis: RedisClusterServers | undefined
/** What stops the Postgres side, when cluster.ts started any of it. */
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
  for (const stop of postgresStops.reverse()) await stop()
  say(exitCode === 0 ? 'cluster: stopped.' : 'cluster: stopped after a failure.')
  process.exit(exitCode)
}

process.on('SIGINT', () => void stopAll(0))
process.on('SIGTERM', () => void stopAll(0))

/**
 * The Postgres URL of the ledger database, as the APIs and workers reach it: the one place that
 * decides it (a pooler or a standby in front goes here, its `stop` into `postgresStops`).
 */
async function ledgerDatabase(): Promise<{ readonly url: string }> {
  const url = withDatabase(process.env.DATABASE_URL ?? DEFAULT_DATABASE_URL, DATABASE)
  say(`cluster: migrating ${safeUrl(url)} …`)
  await prepareDatabase(url)
  return { url }
}

try {
  say('cluster: starting a Redis Cluster (3 masters, 3 replicas) …')
  redis = await startRedisCluster()
  for (const master of await redis.masters()) {
    say(
      `cluster: redis master 127.0.0.1:${master.server.port} (pid ${String(master.server.pid())}), slots ${master.slots.map(([a, b]) => `${a}-${b}`).join(' ')}`,
    )
  }
} catch (error) {
  say(`cluster: the Redis Cluster did not start: ${errorText(error)}`)
  await stopAll(1)
}
let databaseUrl = ''
try {
  databaseUrl = (await ledgerDatabase()).url
} catch (error) {
  say(`cluster: could not prepare the database: ${errorText(error)}`)
  await stopAll(1)
}
const apiKey = await issueDefaultKey(databaseUrl, `cluster-${randomUUID().slice(0, 8)}`)
const adminKey = process.env.ADMIN_API_KEY ?? randomBytes(24).toString('base64url')

const env: Record<string, string> = {
  DATABASE_URL: databaseUrl,
  REDIS_CLUSTER_NODES: redis?.nodeList ?? '',
  QUEUE_PARTITIONS: partitions,
  HOST: '127.0.0.1',
  ADMIN_API_KEY: adminKey,
}
const specs = [
  ...Array.from({ length: APIS }, (_, i) => ({
    name: `api-${i + 1}`,
    start: async () => {
      const port = String(firstPort + i)
      const service = await startService(`api-${i + 1}`, 'api', { ...env, PORT: port })
      say(`cluster: api-${i + 1} on http://127.0.0.1:${port} (pid ${String(service.child.pid)})`)
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
      say(`cluster: worker-${i + 1} (pid ${String(service.child.pid)}, WORKER_ID ${workerId})`)
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
say(`  REDIS_CLUSTER_NODES  ${env.REDIS_CLUSTER_NODES ?? ''}`)
say(`  DATABASE_URL         ${safeUrl(databaseUrl)}`)
say(`  API key (namespace default)  ${apiKey}`)
say(`  Admin key                    ${adminKey}`)
say('A process that exits unexpectedly is restarted. Ctrl-C stops everything.')
