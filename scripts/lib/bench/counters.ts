// The bench's cost counters for one measured phase of one system: CPU of its processes (from
// /proc), Redis commands (`INFO commandstats`) and Postgres transactions of its database
// (`pg_stat_database`). Each figure is a difference of two samples taken around the phase.
import { setTimeout as sleep } from 'node:timers/promises'
import type { Redis } from 'ioredis'
import pg from 'pg'
import {
  postgresServerTicks,
  processTicks,
  readMachineTicks,
  readProcStat,
  ticksToMs,
  type MachineTicks,
} from './proc-cpu.ts'

/** The `calls=` of every `cmdstat_*` line of `INFO commandstats`, by command name. */
export function commandCallsByName(info: string): Map<string, number> {
  const calls = new Map<string, number>()
  for (const match of info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) {
    calls.set(match[1] ?? '', Number(match[2]))
  }
  return calls
}

/** The sum of `calls=` over every `cmdstat_*` line of `INFO commandstats`. */
export function commandCalls(info: string): number {
  let total = 0
  for (const calls of commandCallsByName(info).values()) total += calls
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

/** One look at a Postgres server's processes: CPU ticks and, for backends, their database. */
export interface PostgresSample {
  readonly ticks: ReadonlyMap<number, number>
  /** From `pg_stat_activity`; null for the server's own processes (WAL writer, checkpointer, …). */
  readonly databaseOf: ReadonlyMap<number, string | null>
}

export async function samplePostgres(counters: PostgresCounters): Promise<PostgresSample> {
  const activity = await counters.admin.query<{ pid: number; datname: string | null }>(
    'select pid, datname from pg_stat_activity',
  )
  return {
    ticks: postgresServerTicks(counters.postmasterPid),
    databaseOf: new Map(activity.rows.map((r) => [r.pid, r.datname])),
  }
}

/**
 * The CPU ticks a server spent between two samples, split into the backends of `database` (the
 * system's own connections, and autovacuum of its tables) and the server's shared processes (the
 * postmaster, WAL writer, checkpointer, background writer, launchers), which work for everyone.
 * Backends of other databases are left out. A process seen only in `after` started in between
 * and counts in full; one seen only in `before` exited in between and its last ticks are lost
 * (the systems' pooled connections stay open through a phase).
 */
export function postgresCpuTicks(
  before: PostgresSample,
  after: PostgresSample,
  database: string,
): { own: number; server: number } {
  let own = 0
  let server = 0
  for (const [pid, ticks] of after.ticks) {
    const spent = ticks - (before.ticks.get(pid) ?? 0)
    const db = after.databaseOf.has(pid) ? after.databaseOf.get(pid) : before.databaseOf.get(pid)
    if (db === database) own += spent
    else if (db === null || db === undefined) server += spent
  }
  return { own, server }
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
  readonly machine: MachineTicks
  readonly postgres: PostgresSample | undefined
  readonly redisCalls: number
  readonly redisCallsByName: Map<string, number>
}

async function sample(system: MeasuredSystem): Promise<Sample> {
  const info = await system.redis.info('commandstats')
  return {
    atMs: performance.now(),
    nodeTicks: processTicks(system.nodePids),
    redisTicks: processTicks([system.redisPid]),
    machine: readMachineTicks(),
    postgres:
      system.postgres === undefined ? undefined : await samplePostgres(system.postgres.counters),
    redisCalls: commandCalls(info),
    redisCallsByName: commandCallsByName(info),
  }
}

/** What one phase cost, in totals; divide by the units of work for the per-delegation figures. */
export interface PhaseCost {
  readonly cpuMs: number
  readonly nodeCpuMs: number
  readonly redisCpuMs: number
  /**
   * The CPU of the system database's backends plus that of the server's shared processes minus
   * their idle rate times the phase's duration.
   */
  readonly postgresCpuMs: number
  readonly redisCommands: number
  /** The phase's Redis commands by name (where the round trips go). */
  readonly redisCommandsByName: ReadonlyMap<string, number>
  readonly pgTransactions: number
  /**
   * The share of the whole machine's CPU time (every core, every process, the load generator
   * included) that was busy during the phase: near 1, the phase was bound by CPU.
   */
  readonly machineBusy: number
}

/**
 * The CPU per millisecond of the server's shared processes while the system under test is not
 * running: on a shared server they work for everyone, and `measurePhase` subtracts this rate.
 */
export async function postgresIdleRate(
  counters: PostgresCounters,
  database: string,
  windowMs: number,
): Promise<number> {
  const before = await samplePostgres(counters)
  const started = performance.now()
  await sleep(windowMs)
  const after = await samplePostgres(counters)
  return ticksToMs(postgresCpuTicks(before, after, database).server) / (performance.now() - started)
}

/**
 * Runs `phase` between two samples. `ownTransactions` is how many transactions the bench itself
 * ran in the measured database during the phase (its completion polls); they are not the system's.
 * With `transactions: false` they are not counted (`pgTransactions` is 0) and the closing sample
 * does not wait `PG_STATS_SETTLE_MS` for them.
 */
export async function measurePhase<T>(
  system: MeasuredSystem,
  postgresIdleMsPerMs: number,
  phase: () => Promise<T>,
  ownTransactions: () => number = () => 0,
  options: { readonly transactions?: boolean } = {},
): Promise<{ result: T; cost: PhaseCost }> {
  const countTransactions = system.postgres !== undefined && options.transactions !== false
  const pgBefore =
    system.postgres === undefined || !countTransactions
      ? 0
      : await committedTransactions(system.postgres.counters, system.postgres.database)
  const before = await sample(system)
  const result = await phase()
  const after = await sample(system)
  let pgTransactions = 0
  if (system.postgres !== undefined && countTransactions) {
    await sleep(PG_STATS_SETTLE_MS)
    pgTransactions =
      (await committedTransactions(system.postgres.counters, system.postgres.database)) -
      pgBefore -
      ownTransactions()
  }
  const nodeCpuMs = ticksToMs(after.nodeTicks - before.nodeTicks)
  const redisCpuMs = ticksToMs(after.redisTicks - before.redisTicks)
  let postgresCpuMs = 0
  if (
    system.postgres !== undefined &&
    before.postgres !== undefined &&
    after.postgres !== undefined
  ) {
    const spent = postgresCpuTicks(before.postgres, after.postgres, system.postgres.database)
    postgresCpuMs =
      ticksToMs(spent.own + spent.server) - postgresIdleMsPerMs * (after.atMs - before.atMs)
  }
  return {
    result,
    cost: {
      cpuMs: nodeCpuMs + redisCpuMs + postgresCpuMs,
      nodeCpuMs,
      redisCpuMs,
      postgresCpuMs,
      // The opening sample's own INFO is counted by the closing one.
      redisCommands: after.redisCalls - before.redisCalls - 1,
      redisCommandsByName: new Map(
        [...after.redisCallsByName]
          .map(([name, calls]): [string, number] => [
            name,
            calls - (before.redisCallsByName.get(name) ?? 0),
          ])
          .filter(([, calls]) => calls > 0),
      ),
      pgTransactions,
      machineBusy:
        (after.machine.busy - before.machine.busy) /
        Math.max(1, after.machine.total - before.machine.total),
    },
  }
}
