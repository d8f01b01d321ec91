// The bench's alternating rounds (`npm run bench:rounds`, scripts/bench-rounds.ts): the HTTP
// systems' throughput phase and sequential submit-and-waits again and again, one system after
// another in each round, so that every system meets the machine's slower and faster minutes
// alike. One run of `npm run bench` measures each system once, minutes apart, and this machine's
// speed moves by a quarter or more between such minutes; a ratio taken within a round, between
// neighbours in time, and its median over rounds move much less.
import { randomUUID } from 'node:crypto'
import pg from 'pg'
import type { Redis } from 'ioredis'
import { createBatonClient } from '@baton/client'
import { createDb, issueApiKey } from '@baton/store'
import {
  dropDatabase,
  prepareDatabase,
  startService,
  withDatabase,
  type RunningService,
} from '../services.ts'
import { batonLedger } from './baton-ledger.ts'
import { measurePhase, type PhaseCost, type PostgresCounters } from './counters.ts'
import { floorLedger, startFloorService } from './floor.ts'
import { processTicks, ticksToMs } from './proc-cpu.ts'
import { plainLedgerReader, preparePlainLedgerDatabase } from './floor-bare.ts'
import { PLAIN_LEDGERS } from './floor-required-ledger.ts'
import {
  sequentialWaits,
  submitAll,
  UNCHECKED_KEY,
  type LedgerReader,
  type LoadSizes,
} from './http-load.ts'
import { naiveLedger, prepareNaiveDatabase, startNaiveService } from './naive.ts'
import { percentile, round } from './stats.ts'

/**
 * The systems of `npm run bench` that answer Baton's delegation route, in the order a round runs
 * them: the hand-rolled service, the queue floor, the bare and required ledgers, Baton's core and
 * Baton (see the README's Benchmark section for what each runs).
 */
export const ROUND_SYSTEMS = ['naive', 'floor', 'bare', 'required', 'core', 'baton'] as const
export type RoundSystem = (typeof ROUND_SYSTEMS)[number]

/** What one system's throughput phase cost in one round, per delegation (CPU in ms). */
export interface PhaseFigures {
  readonly system: RoundSystem
  readonly round: number
  /** Delegations per second, from the phase's first request until the ledger had none open. */
  readonly perSecond: number
  readonly cpuMs: number
  readonly nodeCpuMs: number
  /** Of `nodeCpuMs`, the API process's share (the rest is the workers'). */
  readonly apiCpuMs: number
  readonly redisCpuMs: number
  readonly postgresCpuMs: number
  readonly redisCommands: number
  readonly machineBusy: number
  /** Of the `sequential` submit-and-waits after the phase, one after another, in ms. */
  readonly waitP50Ms: number
  readonly waitP99Ms: number
}

/** Where the rounds run: the bench's private Redis, the Postgres server and its counters. */
export interface RoundsContext {
  readonly redisUrl: string
  readonly redis: Redis
  readonly redisPid: number
  readonly serverUrl: string
  /** Each phase's database is `<prefix>_<system>`, dropped and recreated, then dropped after it. */
  readonly databasePrefix: string
  readonly postgres: PostgresCounters
  /** The server's shared processes' idle CPU per ms, subtracted as `npm run bench` does. */
  readonly postgresIdleMsPerMs: number
}

export interface RoundsSizes {
  /** Delegations measured per phase. */
  readonly count: number
  /** Delegations sent to the fresh processes before the phase, not measured. */
  readonly warmup: number
  readonly clients: number
  /** Submit-and-waits made one after another after the phase, on the same processes. */
  readonly sequential: number
  readonly workers: number
  readonly concurrency: number
}

/** A system's processes, up and serving, and the bench's reads of its ledger. */
interface StartedSystem {
  readonly services: readonly RunningService[]
  readonly ledger: LedgerReader
  readonly apiKey: string
  readonly database: string | undefined
  close(): Promise<void>
}

async function deleteKeys(redis: Redis, pattern: string): Promise<void> {
  let cursor = '0'
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 1000)
    cursor = next
    if (keys.length > 0) await redis.del(...keys)
  } while (cursor !== '0')
}

/** The database a system's phase writes: none for the queue floor. */
function phaseDatabase(system: RoundSystem, context: RoundsContext): string | undefined {
  return system === 'floor' ? undefined : `${context.databasePrefix}_${system}`
}

async function startSystem(
  system: RoundSystem,
  context: RoundsContext,
  sizes: RoundsSizes,
  port: number,
  prefix: string,
): Promise<StartedSystem> {
  const database = phaseDatabase(system, context)
  const databaseUrl = database === undefined ? undefined : withDatabase(context.serverUrl, database)
  const env: Record<string, string> = {
    ...(databaseUrl === undefined ? {} : { DATABASE_URL: databaseUrl }),
    REDIS_URL: context.redisUrl,
    QUEUE_PREFIX: prefix,
    PORT: String(port),
    WORKER_CONCURRENCY: String(sizes.concurrency),
  }
  const stopAll = async (services: readonly RunningService[]) => {
    for (const s of [...services].reverse()) await s.stop()
  }
  if (system === 'floor') {
    const services = await startFloorService(env, sizes.workers)
    const ledger = floorLedger(context.redis, prefix)
    return { services, ledger, apiKey: UNCHECKED_KEY, database, close: () => stopAll(services) }
  }
  const url = databaseUrl ?? ''
  if (system === 'baton' || system === 'core') {
    await prepareDatabase(url, { fresh: true })
    const db = createDb({
      connectionString: url,
      maxConnections: 2,
      applicationName: 'baton-bench',
    })
    const close = async (services: readonly RunningService[]) => {
      await stopAll(services)
      await db.destroy()
    }
    if (system === 'core') {
      const services = await startFloorService(env, sizes.workers)
      return {
        services,
        ledger: batonLedger(db),
        apiKey: UNCHECKED_KEY,
        database,
        close: () => close(services),
      }
    }
    const issued = await issueApiKey(db, { namespaceId: 'default', name: 'bench-rounds' })
    if (issued === undefined) throw new Error('the rounds database has no default namespace')
    const appEnv = { ...env, LOG_LEVEL: 'info' }
    const services: RunningService[] = []
    try {
      services.push(await startService('api', 'api', appEnv))
      for (let i = 0; i < sizes.workers; i += 1)
        services.push(await startService(`worker-${i + 1}`, 'worker', appEnv))
    } catch (error) {
      await close(services)
      throw error
    }
    return {
      services,
      ledger: batonLedger(db),
      apiKey: issued.key,
      database,
      close: () => close(services),
    }
  }
  if (system === 'naive') await prepareNaiveDatabase(url)
  else await preparePlainLedgerDatabase(url, PLAIN_LEDGERS[system])
  const pool = new pg.Pool({ connectionString: url, max: 2 })
  let services: RunningService[]
  try {
    services =
      system === 'naive'
        ? await startNaiveService(env, sizes.workers)
        : await startFloorService({ ...env, FLOOR_LEDGER: system }, sizes.workers)
  } catch (error) {
    await pool.end()
    throw error
  }
  return {
    services,
    ledger: system === 'naive' ? naiveLedger(pool) : plainLedgerReader(pool),
    apiKey: UNCHECKED_KEY,
    database,
    async close() {
      await stopAll(services)
      await pool.end()
    },
  }
}

/**
 * One system in one round: fresh processes on a fresh database, `warmup` delegations, then
 * `count` delegations from `clients` callers measured as `npm run bench` measures its throughput
 * phase (CPU of the system's processes, the Redis server and the Postgres backends, less the
 * server's idle rate; no transaction counts, which would need 11 s of settling per phase).
 */
export async function runPhase(
  system: RoundSystem,
  roundNo: number,
  context: RoundsContext,
  sizes: RoundsSizes,
  port: number,
): Promise<PhaseFigures> {
  const prefix = `baton-rounds-${randomUUID().slice(0, 8)}`
  const database = phaseDatabase(system, context)
  try {
    return await measureStarted(
      system,
      roundNo,
      context,
      sizes,
      await startSystem(system, context, sizes, port, prefix),
      port,
    )
  } finally {
    // The next phase starts on a Redis and a server holding nothing of this one's.
    await deleteKeys(context.redis, `${prefix}:*`)
    if (database !== undefined) await dropDatabase(withDatabase(context.serverUrl, database))
  }
}

async function measureStarted(
  system: RoundSystem,
  roundNo: number,
  context: RoundsContext,
  sizes: RoundsSizes,
  started: StartedSystem,
  port: number,
): Promise<PhaseFigures> {
  try {
    const client = createBatonClient({
      baseUrl: `http://127.0.0.1:${port}`,
      apiKey: started.apiKey,
    })
    // `submitAll` sends `count` from `clients` callers; `sequentialWaits` makes `sequential` calls.
    const load = (count: number): LoadSizes => ({
      count,
      clients: sizes.clients,
      sequential: sizes.sequential,
      keyed: false,
    })
    const warm = await submitAll(client, load(sizes.warmup), [], started.ledger)
    const nodePids = started.services.map((s) => s.pid)
    // Every launcher starts the API first.
    const apiPid = nodePids.slice(0, 1)
    let apiTicks = 0
    const t0 = performance.now()
    const { result, cost } = await measurePhase(
      {
        nodePids,
        redis: context.redis,
        redisPid: context.redisPid,
        ...(started.database === undefined
          ? {}
          : { postgres: { counters: context.postgres, database: started.database } }),
      },
      context.postgresIdleMsPerMs,
      async () => {
        const before = processTicks(apiPid)
        const submitted = await submitAll(client, load(sizes.count), [], started.ledger)
        apiTicks = processTicks(apiPid) - before
        return submitted
      },
      () => started.ledger.queries,
      { transactions: false },
    )
    const seconds = (performance.now() - t0) / 1000
    const waits = await sequentialWaits(client, load(sizes.count), [])
    const rejected = warm.rejected + result.rejected + waits.rejected
    if (rejected > 0)
      throw new Error(`${system} rejected ${rejected} delegations in round ${roundNo}`)
    return {
      ...phaseFigures(system, roundNo, sizes.count, seconds, cost, ticksToMs(apiTicks)),
      waitP50Ms: round(percentile(waits.latencies, 50)),
      waitP99Ms: round(percentile(waits.latencies, 99)),
    }
  } finally {
    await started.close()
  }
}

function phaseFigures(
  system: RoundSystem,
  roundNo: number,
  count: number,
  seconds: number,
  cost: PhaseCost,
  apiCpuMs: number,
): Omit<PhaseFigures, 'waitP50Ms' | 'waitP99Ms'> {
  const per = (n: number, digits = 3) => round(n / count, digits)
  return {
    system,
    round: roundNo,
    perSecond: round(count / seconds, 0),
    cpuMs: per(cost.cpuMs),
    nodeCpuMs: per(cost.nodeCpuMs),
    apiCpuMs: per(apiCpuMs),
    redisCpuMs: per(cost.redisCpuMs),
    postgresCpuMs: per(cost.postgresCpuMs),
    redisCommands: per(cost.redisCommands, 2),
    machineBusy: round(cost.machineBusy, 2),
  }
}

/** The middle value (the mean of the middle two for an even count); NaN for none. */
export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b)
  const mid = Math.floor(sorted.length / 2)
  if (sorted.length === 0) return Number.NaN
  return sorted.length % 2 === 1
    ? (sorted[mid] ?? Number.NaN)
    : ((sorted[mid - 1] ?? 0) + (sorted[mid] ?? 0)) / 2
}

/**
 * One system's figures over every round: the median of each of its phases' figures, and its
 * ratios to the hand-rolled service.
 */
export interface SystemSummary extends Omit<PhaseFigures, 'round' | 'machineBusy'> {
  readonly rounds: number
  /**
   * The median over rounds of this system's throughput divided by the hand-rolled service's in
   * the same round (absent without the hand-rolled service), and the lowest and highest of them.
   */
  readonly perSecondVsNaive?: Spread
  /** The same for CPU per delegation: below 1, cheaper than the hand-rolled service. */
  readonly cpuVsNaive?: Spread
  /** The same for the sequential p50: below 1, faster than the hand-rolled service. */
  readonly waitP50VsNaive?: Spread
}

export interface Spread {
  readonly median: number
  readonly min: number
  readonly max: number
}

function spread(values: readonly number[], digits: number): Spread | undefined {
  if (values.length === 0) return undefined
  return {
    median: round(median(values), digits),
    min: round(Math.min(...values), digits),
    max: round(Math.max(...values), digits),
  }
}

/** Each measured system's summary, in `ROUND_SYSTEMS` order. */
export function summarizeRounds(phases: readonly PhaseFigures[]): SystemSummary[] {
  const naiveOf = new Map(phases.filter((p) => p.system === 'naive').map((p) => [p.round, p]))
  const summaries: SystemSummary[] = []
  for (const system of ROUND_SYSTEMS) {
    const own = phases.filter((p) => p.system === system)
    if (own.length === 0) continue
    const mid = (pick: (p: PhaseFigures) => number, digits = 3) =>
      round(median(own.map(pick)), digits)
    const paired = own.flatMap((p) => {
      const naive = naiveOf.get(p.round)
      return naive === undefined ? [] : [{ p, naive }]
    })
    const perSecondVsNaive = spread(
      paired.map(({ p, naive }) => p.perSecond / naive.perSecond),
      2,
    )
    const cpuVsNaive = spread(
      paired.map(({ p, naive }) => p.cpuMs / naive.cpuMs),
      2,
    )
    const waitP50VsNaive = spread(
      paired.map(({ p, naive }) => p.waitP50Ms / naive.waitP50Ms),
      2,
    )
    summaries.push({
      system,
      rounds: own.length,
      perSecond: mid((p) => p.perSecond, 0),
      cpuMs: mid((p) => p.cpuMs),
      nodeCpuMs: mid((p) => p.nodeCpuMs),
      apiCpuMs: mid((p) => p.apiCpuMs),
      redisCpuMs: mid((p) => p.redisCpuMs),
      postgresCpuMs: mid((p) => p.postgresCpuMs),
      redisCommands: mid((p) => p.redisCommands, 2),
      waitP50Ms: mid((p) => p.waitP50Ms, 2),
      waitP99Ms: mid((p) => p.waitP99Ms, 2),
      ...(perSecondVsNaive === undefined ? {} : { perSecondVsNaive }),
      ...(cpuVsNaive === undefined ? {} : { cpuVsNaive }),
      ...(waitP50VsNaive === undefined ? {} : { waitP50VsNaive }),
    })
  }
  return summaries
}
