// The bench's cost counters for one system: CPU of its processes (from /proc), Redis commands
// (`INFO commandstats`) and Postgres transactions of its database (`pg_stat_database`). Each figure
// is a difference of two samples taken around a phase.
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

export interface PostgresCounters {
  /** A connection to the server's `postgres` database: reading statistics there adds no transaction to a measured database. */
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
  if (postmasterPid === undefined) {
    await admin.end()
    throw new Error('the Postgres server is not a process of this machine: its CPU cannot be read')
  }
  return { admin, postmasterPid }
}

/**
 * The transactions `database` has committed and rolled back, read once no backend is connected to
 * it. A busy backend reports its counts at most once a second and an idle one up to 10 s late, but
 * every backend reports what it still holds as it exits, before it leaves `pg_stat_activity`: with
 * none left, the count is exact without a settling wait.
 */
export async function settledTransactions(
  counters: PostgresCounters,
  database: string,
  timeoutMs = 60_000,
): Promise<number> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const r = await counters.admin.query<{ backends: number; n: string | null }>(
      `select (select count(*)::int from pg_stat_activity where datname = $1) as backends,
              (select (xact_commit + xact_rollback)::text from pg_stat_database where datname = $1) as n`,
      [database],
    )
    const row = r.rows[0]
    if (row?.backends === 0) return Number(row.n ?? 0)
    if (Date.now() > deadline)
      throw new Error(`${row?.backends} backends still connected to ${database}`)
    await sleep(50)
  }
}

/** One look at a Postgres server's processes: CPU ticks and, for backends, their database. */
export interface PostgresSample {
  readonly ticks: ReadonlyMap<number, number>
  /** From `pg_stat_activity`; null for the server's own processes (WAL writer, checkpointer, …). */
  readonly databaseOf: ReadonlyMap<number, string | null>
}

async function samplePostgres(counters: PostgresCounters): Promise<PostgresSample> {
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

/**
 * The CPU per millisecond of the server's shared processes while no system runs: on a shared
 * server they work for everyone, and `measureCost` subtracts this rate. The counters' own backend
 * is in the `postgres` database and left out.
 */
export async function postgresIdleRate(
  counters: PostgresCounters,
  windowMs: number,
): Promise<number> {
  const before = await samplePostgres(counters)
  const started = performance.now()
  await sleep(windowMs)
  const after = await samplePostgres(counters)
  const spent = postgresCpuTicks(before, after, 'postgres').server
  return ticksToMs(spent) / (performance.now() - started)
}

/** The bench's counters: its private Redis and the Postgres server (context.ts opens them). */
export interface Counters {
  /** The bench's own connection to its Redis; each sample sends it one INFO. */
  readonly redis: Redis
  readonly redisPid: number
  readonly postgres: PostgresCounters
  /** The CPU per ms of the server's shared processes while no system ran (`postgresIdleRate`). */
  readonly postgresIdleMsPerMs: number
}

/** What one phase cost, in totals. */
export interface PhaseCost {
  readonly nodeCpuMs: number
  readonly redisCpuMs: number
  /**
   * The CPU of the database's backends plus that of the server's shared processes less their idle
   * rate times the phase's duration; none for a system without a database.
   */
  readonly postgresCpuMs?: number
  /** Of `postgresCpuMs`, the server's shared processes (checkpointer, WAL writer, …) less idle. */
  readonly postgresServerCpuMs?: number
  readonly redisCommands: number
}

/**
 * Runs `phase` between two samples of the counters of a system: its Node processes (API and
 * workers; the bench itself for raw BullMQ), the Redis server and, if it has one, its database.
 */
export async function measureCost<T>(
  counters: Counters,
  nodePids: readonly number[],
  database: string | undefined,
  phase: () => Promise<T>,
): Promise<{ result: T; cost: PhaseCost }> {
  const sample = async () => {
    const info = await counters.redis.info('commandstats')
    return {
      atMs: performance.now(),
      nodeTicks: processTicks(nodePids),
      redisTicks: processTicks([counters.redisPid]),
      postgres: database === undefined ? undefined : await samplePostgres(counters.postgres),
      redisCalls: commandCalls(info),
    }
  }
  const before = await sample()
  const result = await phase()
  const after = await sample()
  let postgres: { postgresCpuMs: number; postgresServerCpuMs: number } | undefined
  if (database !== undefined && before.postgres && after.postgres) {
    const spent = postgresCpuTicks(before.postgres, after.postgres, database)
    const idleMs = counters.postgresIdleMsPerMs * (after.atMs - before.atMs)
    const serverMs = ticksToMs(spent.server) - idleMs
    postgres = { postgresCpuMs: ticksToMs(spent.own) + serverMs, postgresServerCpuMs: serverMs }
  }
  return {
    result,
    cost: {
      nodeCpuMs: ticksToMs(after.nodeTicks - before.nodeTicks),
      redisCpuMs: ticksToMs(after.redisTicks - before.redisTicks),
      ...postgres,
      // The opening sample's own INFO is counted by the closing one.
      redisCommands: after.redisCalls - before.redisCalls - 1,
    },
  }
}
