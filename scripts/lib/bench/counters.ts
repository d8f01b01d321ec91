// The bench's cost counters for one measured phase of one system: CPU of its processes (from
// /proc), Redis commands (`INFO commandstats`) and Postgres transactions of its database
// (`pg_stat_database`). Each figure is a difference of two samples taken around the phase.
import { setTimeout as sleep } from 'node:timers/promises'
import type { Redis } from 'ioredis'
import pg from 'pg'
import { postgresServerTicks, processTicks, readProcStat, ticksToMs } from './proc-cpu.ts'

/** The sum of `calls=` over every `cmdstat_*` line of `INFO commandstats`. */
export function commandCalls(info: string): number {
  let total = 0
  for (const match of info.matchAll(/^cmdstat_[^:]+:calls=(\d+)/gm)) total += Number(match[1])
  return total
}

/** The `process_id` of `INFO server`: the pid of the Redis server the connection talks to. */
export function redisProcessId(info: string): number {
  const match = /^process_id:(\d+)/m.exec(info)
  if (match?.[1] === undefined) throw new Error('INFO server has no process_id')
  return Number(match[1])
}

/**
 * An idle backend reports its transaction counts up to 10 s late (Postgres flushes pending
 * statistics at most once a second while busy and on a 10 s timer once idle), so the closing
 * sample of `pg_stat_database` is read this long after the phase.
 */
export const PG_STATS_SETTLE_MS = 11_000

export interface PostgresCounters {
  /** A connection to the server's `postgres` database: reading statistics there adds no transaction to the measured database. */
  readonly admin: pg.Client
  readonly postmasterPid: number
}

/** Connects to the server's `postgres` database and finds its postmaster (the parent of our backend). */
export async function connectPostgresCounters(databaseUrl: string): Promise<PostgresCounters> {
  const url = new URL(databaseUrl)
  url.pathname = '/postgres'
  const admin = new pg.Client({
    connectionString: url.toString(),
    application_name: 'baton-bench-counters',
  })
  await admin.connect()
  const backend = await admin.query<{ pid: number }>('select pg_backend_pid() as pid')
  const pid = backend.rows[0]?.pid
  const postmasterPid = pid === undefined ? undefined : readProcStat(pid)?.ppid
  if (postmasterPid === undefined)
    throw new Error('the Postgres server is not a process of this machine: its CPU cannot be read')
  return { admin, postmasterPid }
}

export async function committedTransactions(
  counters: PostgresCounters,
  database: string,
): Promise<number> {
  const r = await counters.admin.query<{ n: string }>(
    'select (xact_commit + xact_rollback)::text as n from pg_stat_database where datname = $1',
    [database],
  )
  return Number(r.rows[0]?.n ?? 0)
}

/** The system measured: its own processes, the shared Redis, and (when it uses one) its database. */
export interface MeasuredSystem {
  /** The Node processes of the system (API, workers; the bench itself for raw BullMQ). */
  readonly nodePids: readonly number[]
  /** The bench's own connection to the private Redis; each sample sends it one INFO. */
  readonly redis: Redis
  readonly redisPid: number
  readonly postgres?: { readonly counters: PostgresCounters; readonly database: string }
}

interface Sample {
  readonly atMs: number
  readonly nodeTicks: number
  readonly redisTicks: number
  readonly postgresTicks: number
  readonly redisCalls: number
}

async function sample(system: MeasuredSystem): Promise<Sample> {
  const info = await system.redis.info('commandstats')
  return {
    atMs: performance.now(),
    nodeTicks: processTicks(system.nodePids),
    redisTicks: processTicks([system.redisPid]),
    postgresTicks:
      system.postgres === undefined
        ? 0
        : postgresServerTicks(system.postgres.counters.postmasterPid),
    redisCalls: commandCalls(info),
  }
}

/** What one phase cost, in totals; divide by the units of work for the per-delegation figures. */
export interface PhaseCost {
  readonly cpuMs: number
  readonly nodeCpuMs: number
  readonly redisCpuMs: number
  /** The server's CPU over the phase minus its idle rate times the phase's duration. */
  readonly postgresCpuMs: number
  readonly redisCommands: number
  readonly pgTransactions: number
}

/**
 * The Postgres server's CPU per millisecond while the system under test is not running: on a
 * shared server this is the load of everyone else, which `measurePhase` subtracts.
 */
export async function postgresIdleRate(
  counters: PostgresCounters,
  windowMs: number,
): Promise<number> {
  const before = postgresServerTicks(counters.postmasterPid)
  const started = performance.now()
  await sleep(windowMs)
  return (
    ticksToMs(postgresServerTicks(counters.postmasterPid) - before) / (performance.now() - started)
  )
}

/**
 * Runs `phase` between two samples. `ownTransactions` is how many transactions the bench itself
 * ran in the measured database during the phase (its completion polls); they are not the system's.
 */
export async function measurePhase<T>(
  system: MeasuredSystem,
  postgresIdleMsPerMs: number,
  phase: () => Promise<T>,
  ownTransactions: () => number = () => 0,
): Promise<{ result: T; cost: PhaseCost }> {
  const pgBefore =
    system.postgres === undefined
      ? 0
      : await committedTransactions(system.postgres.counters, system.postgres.database)
  const before = await sample(system)
  const result = await phase()
  const after = await sample(system)
  let pgTransactions = 0
  if (system.postgres !== undefined) {
    await sleep(PG_STATS_SETTLE_MS)
    pgTransactions =
      (await committedTransactions(system.postgres.counters, system.postgres.database)) -
      pgBefore -
      ownTransactions()
  }
  const nodeCpuMs = ticksToMs(after.nodeTicks - before.nodeTicks)
  const redisCpuMs = ticksToMs(after.redisTicks - before.redisTicks)
  const postgresCpuMs =
    system.postgres === undefined
      ? 0
      : ticksToMs(after.postgresTicks - before.postgresTicks) -
        postgresIdleMsPerMs * (after.atMs - before.atMs)
  return {
    result,
    cost: {
      cpuMs: nodeCpuMs + redisCpuMs + postgresCpuMs,
      nodeCpuMs,
      redisCpuMs,
      postgresCpuMs,
      // The opening sample's own INFO is counted by the closing one.
      redisCommands: after.redisCalls - before.redisCalls - 1,
      pgTransactions,
    },
  }
}
