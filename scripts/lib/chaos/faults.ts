// The faults `npm run chaos` injects at random intervals while it submits: SIGKILL a worker (and
// start a replacement), restart the API, FLUSHDB the chaos Redis database, terminate the chaos
// database's Postgres backends; and, through the fault proxies every process of the fleet reaches
// Postgres and Redis by: stall Postgres (its open connections for seconds, or every connection for
// less than a lease), reset every Postgres connection, stall Redis; hold locks on hot ledger rows;
// restart every worker one by one (a deploy).
import { setTimeout as sleep } from 'node:timers/promises'
import type { Redis } from 'ioredis'
import pg from 'pg'
import type { FaultProxy } from '@baton/testing/fault-proxy'
import { databaseName, withDatabase } from '../services.ts'
import type { Fleet } from './fleet.ts'
import { FAULT_KINDS, rand, type ChaosRun, type FaultKind } from './run.ts'

/** The proxies between the fleet and the real Postgres and Redis. */
export interface ChaosProxies {
  readonly pg: FaultProxy
  readonly redis: FaultProxy
}

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
  redis: Redis,
  proxies: ChaosProxies,
): Promise<string> {
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
      const existingOnly = run.faults.pg_stalls % 2 === 0
      const ms = existingOnly ? rand(3_000, 6_000) : rand(1_000, 2_000)
      proxies.pg.stall({ existingOnly })
      await sleep(ms)
      proxies.pg.resume()
      return `Postgres stalled ${ms} ms (${existingOnly ? 'open connections' : 'every connection'})`
    }
    case 'pg_resets': {
      const open = proxies.pg.connections
      proxies.pg.reset()
      return `reset ${open} Postgres connections`
    }
    case 'redis_stalls': {
      const ms = rand(2_000, 5_000)
      proxies.redis.stall()
      await sleep(ms)
      proxies.redis.resume()
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
    default: {
      const never: never = kind
      throw new Error(`unknown fault ${String(never)}`)
    }
  }
}

/**
 * Injects faults every 1–4 s, each kind in turn in a shuffled order, until submission is done and
 * every kind has fired at least once.
 */
export async function faultLoop(
  run: ChaosRun,
  fleet: Fleet,
  redis: Redis,
  proxies: ChaosProxies,
  submissionDone: () => boolean,
): Promise<void> {
  const { faults } = run
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
      const what = await injectFault(run, kind, fleet, redis, proxies)
      faults[kind] += 1
      run.note(`fault ${kind}: ${what}`)
    } catch (error) {
      proxies.pg.resume()
      proxies.redis.resume()
      run.note(`fault ${kind} failed: ${String(error)}`)
    }
  }
}
