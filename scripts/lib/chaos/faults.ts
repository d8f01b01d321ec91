// The faults `npm run chaos` injects at random intervals while it submits: SIGKILL a worker (and
// start a replacement), restart the API, FLUSHDB the chaos Redis database, terminate the chaos
// database's Postgres backends; and, through the fault proxies every process of the fleet reaches
// Postgres and Redis by: stall Postgres (its open connections for seconds, or every connection for
// less than a lease), reset every Postgres connection, stall Redis; hold locks on hot ledger rows;
// restart every worker one by one (a deploy). On a Redis Cluster (`--cluster`) the Redis faults act
// on its masters instead of through a proxy (a cluster client follows the cluster's own addresses,
// which no single proxy stands in for): a flush empties every master, a stall stops one master for
// less than the cluster's node timeout (SIGSTOP), and a master kill (SIGKILL) makes the cluster
// promote its replica; the killed node then rejoins as a replica, so the next kill has one too.
import { setTimeout as sleep } from 'node:timers/promises'
import { Redis } from 'ioredis'
import pg from 'pg'
import type { FaultProxy } from '@baton/testing/fault-proxy'
import type { RedisClusterServers } from '@baton/testing/redis-cluster'
import { databaseName, withDatabase } from '../services.ts'
import type { Fleet } from './fleet.ts'
import { rand, type ChaosRun, type FaultKind } from './run.ts'

/**
 * The fleet's Redis as the faults reach it: one Redis (this script's own client to it, and the
 * proxy the fleet reaches it through), or a private Redis Cluster.
 */
export type ChaosRedis =
  | { readonly kind: 'one'; readonly client: Redis; readonly proxy: FaultProxy }
  | { readonly kind: 'cluster'; readonly cluster: RedisClusterServers }

/** The fleet's Postgres, reached through `proxy`, and its Redis. */
export interface ChaosServices {
  readonly pgProxy: FaultProxy
  readonly redis: ChaosRedis
}

/** Stays below the cluster's node timeout, so a stalled master is not replaced. */
const CLUSTER_STALL_MS = [800, 1_500] as const

/** A client of the `postgres` database, so that it is never one of its own targets. */
async function adminClient(run: ChaosRun): Promise<pg.Client> {
  const admin = new pg.Client({ connectionString: withDatabase(run.databaseUrl, 'postgres') })
  admin.on('error', () => undefined)
  await admin.connect()
  return admin
}

function shuffled<T>(items: readonly T[]): T[] {
  const a = [...items]
  for (let i = a.length - 1; i > 0; i -= 1) {
    const j = Math.floor(Math.random() * (i + 1))
    ;[a[i], a[j]] = [a[j]!, a[i]!]
  }
  return a
}

async function injectFault(
  run: ChaosRun,
  kind: FaultKind,
  fleet: Fleet,
  services: ChaosServices,
): Promise<string> {
  const { redis } = services
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
      if (redis.kind === 'cluster') {
        const masters = await redis.cluster.masters()
        await Promise.all(masters.map((m) => flushAll(m.server.url)))
        return `FLUSHALL on ${masters.length} cluster masters`
      }
      await redis.client.flushdb()
      return `FLUSHDB on Redis db ${run.redisDb}`
    }
    case 'pg_kills': {
      const admin = await adminClient(run)
      try {
        const r = await admin.query<{ n: number }>(
          `select count(*)::int as n from (
             select pg_terminate_backend(pid) from pg_stat_activity
             where datname = $1 and pid <> pg_backend_pid()) t`,
          [databaseName(run.databaseUrl)],
        )
        return `terminated ${r.rows[0]?.n ?? 0} Postgres backends`
      } finally {
        await admin.end().catch(() => undefined)
      }
    }
    case 'pg_stalls': {
      // Alternately the open connections only (they hang; new ones flow), for seconds, and every
      // connection, for less than a lease.
      const existingOnly = (run.faults.pg_stalls ?? 0) % 2 === 0
      const ms = existingOnly ? rand(3_000, 6_000) : rand(1_000, 2_000)
      services.pgProxy.stall({ existingOnly })
      await sleep(ms)
      services.pgProxy.resume()
      return `Postgres stalled ${ms} ms (${existingOnly ? 'open connections' : 'every connection'})`
    }
    case 'pg_resets': {
      const open = services.pgProxy.connections
      services.pgProxy.reset()
      return `reset ${open} Postgres connections`
    }
    case 'redis_stalls': {
      if (redis.kind === 'cluster') {
        const masters = await redis.cluster.masters()
        const master = masters[rand(0, masters.length - 1)]
        if (master === undefined) throw new Error('the cluster has no master')
        const ms = rand(...CLUSTER_STALL_MS)
        master.server.pause()
        try {
          await sleep(ms)
        } finally {
          master.server.resume()
        }
        return `Redis master ${master.server.port} stopped ${ms} ms`
      }
      const ms = rand(2_000, 5_000)
      redis.proxy.stall()
      await sleep(ms)
      redis.proxy.resume()
      return `Redis stalled ${ms} ms`
    }
    case 'lock_holds': {
      // Row locks on hot rows: running attempts (renewals skip them, commits wait) and the
      // namespace's artifact usage (artifact commits and expiry wait), for a few seconds.
      const holder = new pg.Client({ connectionString: run.databaseUrl })
      holder.on('error', () => undefined)
      await holder.connect()
      const ms = rand(2_000, 4_000)
      try {
        await holder.query('begin')
        const attempts = await holder.query(
          `select id from attempts where status = 'running' order by random() limit 20 for update skip locked`,
        )
        await holder.query(
          `select namespace_id from namespace_usage where namespace_id = 'default' for update`,
        )
        await sleep(ms)
        await holder.query('rollback')
        return `held ${attempts.rowCount ?? 0} running attempts and the namespace usage ${ms} ms`
      } finally {
        await holder.end().catch(() => undefined)
      }
    }
    case 'rolling_restarts': {
      const t = performance.now()
      const replaced = await fleet.rollingRestart()
      return `rolling restart in ${Math.round(performance.now() - t)} ms: ${replaced.join(', ')}`
    }
    case 'master_kills': {
      if (redis.kind !== 'cluster') throw new Error('a master kill needs a Redis Cluster')
      return await killMaster(redis.cluster)
    }
    default: {
      const never: never = kind
      throw new Error(`unknown fault ${String(never)}`)
    }
  }
}

async function flushAll(url: string): Promise<void> {
  const node = new Redis(url, { maxRetriesPerRequest: 1, lazyConnect: true })
  try {
    await node.flushall()
  } finally {
    node.disconnect()
  }
}

/**
 * SIGKILL of a random master; resolves once its replica serves its slots and the killed node
 * follows it as a replica.
 */
async function killMaster(cluster: RedisClusterServers): Promise<string> {
  const masters = await cluster.masters()
  const victim = masters[rand(0, masters.length - 1)]
  if (victim === undefined) throw new Error('the cluster has no master')
  const replica = await cluster.replicaOf(victim.server)
  if (replica === undefined) throw new Error(`master ${victim.server.port} has no replica`)
  const t = performance.now()
  await victim.server.crash()
  await cluster.waitHealthy(60_000)
  const promotedMs = Math.round(performance.now() - t)
  const promoted = (await cluster.masters()).find((m) => m.server === replica)
  if (promoted === undefined)
    throw new Error(`replica ${replica.port} of killed master ${victim.server.port} not promoted`)
  await cluster.rejoin(victim.server, 120_000)
  return (
    `SIGKILL master ${victim.server.port}: replica ${replica.port} promoted in ${promotedMs} ms, ` +
    `${victim.server.port} rejoined as a replica after ${Math.round(performance.now() - t)} ms`
  )
}

/**
 * Injects faults every 1–4 s, each kind in turn in a shuffled order, until submission is done and
 * every kind has fired at least once.
 */
export async function faultLoop(
  run: ChaosRun,
  fleet: Fleet,
  services: ChaosServices,
  submissionDone: () => boolean,
): Promise<void> {
  const { faults, faultKinds } = run
  let order: FaultKind[] = []
  for (;;) {
    await sleep(rand(1000, 4000))
    const allFired = faultKinds.every((k) => (faults[k] ?? 0) > 0)
    if (submissionDone() && allFired) return
    if (order.length === 0) order = shuffled(faultKinds)
    // Once submission has ended, only the kinds that never fired are still owed.
    let kind = order.shift()!
    if (submissionDone()) kind = faultKinds.find((k) => !faults[k]) ?? kind
    try {
      const what = await injectFault(run, kind, fleet, services)
      faults[kind] = (faults[kind] ?? 0) + 1
      run.note(`fault ${kind}: ${what}`)
    } catch (error) {
      services.pgProxy.resume()
      if (services.redis.kind === 'one') services.redis.proxy.resume()
      run.note(`fault ${kind} failed: ${String(error)}`)
    }
  }
}
