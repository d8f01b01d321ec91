// The faults `npm run chaos` injects at random intervals while it submits: SIGKILL a worker (and
// start a replacement), restart the API, FLUSHDB the chaos Redis database, terminate the chaos
// database's Postgres backends.
import { setTimeout as sleep } from 'node:timers/promises'
import type { Redis } from 'ioredis'
import pg from 'pg'
import { databaseName, withDatabase } from '../services.ts'
import type { Fleet } from './fleet.ts'
import { FAULT_KINDS, rand, type ChaosRun, type FaultKind } from './run.ts'

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
      // Connected to the `postgres` database, so this client is never one of its own targets.
      const admin = new pg.Client({ connectionString: withDatabase(run.databaseUrl, 'postgres') })
      admin.on('error', () => undefined)
      await admin.connect()
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
      const what = await injectFault(run, kind, fleet, redis)
      faults[kind] += 1
      run.note(`fault ${kind}: ${what}`)
    } catch (error) {
      run.note(`fault ${kind} failed: ${String(error)}`)
    }
  }
}
