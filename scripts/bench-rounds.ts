// `npm run bench:rounds [-- --json] [--rounds N] [--count N] [--warmup N] [--clients N]
//   [--sequential N] [--workers N] [--systems naive,floor,bare,required,core,baton]
//   [--baseline-ms N]`
//
// `npm run bench`'s HTTP systems in alternating rounds: in each round every system in turn gets
// fresh processes and a fresh database, `--warmup` delegations, then `--count` measured ones from
// `--clients` callers and `--sequential` submit-and-waits one after another (see
// scripts/lib/bench/rounds.ts). Prints each phase as it ends, then per system the medians over
// rounds and, round by round, its throughput, CPU per delegation and sequential p50 divided by the
// hand-rolled service's of the same round.
import { createServer, type AddressInfo } from 'node:net'
import { parseArgs } from 'node:util'
import { Redis } from 'ioredis'
import { startRedisServer } from '@baton/testing/redis-server'
import { connectPostgresCounters, postgresIdleRate, redisProcessId } from './lib/bench/counters.ts'
import {
  ROUND_SYSTEMS,
  runPhase,
  summarizeRounds,
  type PhaseFigures,
  type RoundSystem,
  type Spread,
  type SystemSummary,
} from './lib/bench/rounds.ts'
import { round } from './lib/bench/stats.ts'
import { DEFAULT_DATABASE_URL } from './lib/services.ts'

const { values: args } = parseArgs({
  options: {
    json: { type: 'boolean', default: false },
    rounds: { type: 'string', default: '3' },
    count: { type: 'string', default: '20000' },
    warmup: { type: 'string', default: '2000' },
    clients: { type: 'string', default: '64' },
    sequential: { type: 'string', default: '300' },
    workers: { type: 'string', default: '2' },
    systems: { type: 'string', default: ROUND_SYSTEMS.join(',') },
    'baseline-ms': { type: 'string', default: '5000' },
  },
})

function positiveInteger(name: string, value: string, min = 1): number {
  const n = Number(value)
  if (!Number.isInteger(n) || n < min) throw new Error(`--${name} must be an integer ≥ ${min}`)
  return n
}

const ROUNDS = positiveInteger('rounds', args.rounds)
const WORKERS = positiveInteger('workers', args.workers)
const SIZES = {
  count: positiveInteger('count', args.count),
  warmup: positiveInteger('warmup', args.warmup, 0),
  clients: positiveInteger('clients', args.clients),
  sequential: positiveInteger('sequential', args.sequential),
  workers: WORKERS,
  // As `npm run bench` runs its systems.
  concurrency: Math.max(100, Math.ceil(200 / WORKERS)),
}
const BASELINE_MS = positiveInteger('baseline-ms', args['baseline-ms'], 0)
const SYSTEMS = args.systems.split(',').map((name) => {
  if (!(ROUND_SYSTEMS as readonly string[]).includes(name))
    throw new Error(`--systems takes some of ${ROUND_SYSTEMS.join(', ')}; got ${name}`)
  return name as RoundSystem
})
const serverUrl = process.env.DATABASE_URL ?? DEFAULT_DATABASE_URL
const log = (line: string): void => {
  if (!args.json) console.log(line)
  else console.error(line)
}

async function freeLocalPort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  await new Promise<void>((resolve) => server.close(() => resolve()))
  return port
}

/** The flat JSON fields of one system's summary: `<system>_per_s`, `<system>_cpu_ms_…`, …. */
function summaryFields(s: SystemSummary): Record<string, number> {
  const p = s.system
  return {
    [`${p}_per_s`]: s.perSecond,
    [`${p}_cpu_ms_per_delegation`]: s.cpuMs,
    [`${p}_node_cpu_ms_per_delegation`]: s.nodeCpuMs,
    [`${p}_api_cpu_ms_per_delegation`]: s.apiCpuMs,
    [`${p}_pg_cpu_ms_per_delegation`]: s.postgresCpuMs,
    [`${p}_redis_cpu_ms_per_delegation`]: s.redisCpuMs,
    [`${p}_redis_commands_per_delegation`]: s.redisCommands,
    [`${p}_wait_p50_ms`]: s.waitP50Ms,
    [`${p}_wait_p99_ms`]: s.waitP99Ms,
    ...(s.perSecondVsNaive === undefined
      ? {}
      : {
          [`${p}_per_s_vs_naive`]: s.perSecondVsNaive.median,
          [`${p}_per_s_vs_naive_min`]: s.perSecondVsNaive.min,
          [`${p}_per_s_vs_naive_max`]: s.perSecondVsNaive.max,
        }),
    ...(s.cpuVsNaive === undefined ? {} : { [`${p}_cpu_vs_naive`]: s.cpuVsNaive.median }),
    ...(s.waitP50VsNaive === undefined
      ? {}
      : { [`${p}_wait_p50_vs_naive`]: s.waitP50VsNaive.median }),
  }
}

async function main(): Promise<void> {
  log(
    `bench:rounds: ${ROUNDS} rounds of ${SYSTEMS.join(', ')}; each ${SIZES.warmup} warm-up then ${SIZES.count} measured delegations from ${SIZES.clients} clients, ${WORKERS} workers`,
  )
  const redisServer = await startRedisServer()
  const redis = new Redis(redisServer.url)
  const postgres = await connectPostgresCounters(serverUrl)
  const phases: PhaseFigures[] = []
  try {
    // The server's shared processes' idle rate, before any system runs (the counters' own backend,
    // in the `postgres` database, is left out of it).
    const postgresIdleMsPerMs = await postgresIdleRate(postgres, 'postgres', BASELINE_MS)
    const context = {
      redisUrl: redisServer.url,
      redis,
      redisPid: redisProcessId(await redis.info('server')),
      serverUrl,
      databasePrefix: 'baton_bench_rounds',
      postgres,
      postgresIdleMsPerMs,
    }
    for (let r = 1; r <= ROUNDS; r += 1) {
      for (const system of SYSTEMS) {
        const figures = await runPhase(system, r, context, SIZES, await freeLocalPort())
        phases.push(figures)
        console.error(`bench:rounds: ${JSON.stringify(figures)}`)
      }
    }
  } finally {
    redis.disconnect()
    await postgres.admin.end()
    await redisServer.close()
  }
  const summaries = summarizeRounds(phases)
  log('')
  const range = (r: Spread | undefined): string =>
    r === undefined ? '-' : `${r.median} (${r.min}–${r.max})`
  log(
    '| system | per s | CPU ms (API + workers, Postgres, Redis) | Redis commands | wait p50 · p99 ms | per s ÷ hand-rolled | CPU ÷ hand-rolled | p50 ÷ hand-rolled |',
  )
  log('| --- | ---: | --- | ---: | ---: | --- | --- | --- |')
  for (const s of summaries) {
    const workers = round(s.nodeCpuMs - s.apiCpuMs, 3)
    log(
      `| ${s.system} | ${s.perSecond} | ${s.cpuMs} (${s.apiCpuMs} + ${workers}, ${s.postgresCpuMs}, ${s.redisCpuMs}) | ${s.redisCommands} | ${s.waitP50Ms} · ${s.waitP99Ms} | ${range(s.perSecondVsNaive)} | ${range(s.cpuVsNaive)} | ${range(s.waitP50VsNaive)} |`,
    )
  }
  log('(medians over rounds; each ratio taken within a round, its median and lowest–highest)')
  if (args.json) {
    const fields = Object.assign({}, ...summaries.map(summaryFields)) as Record<string, number>
    console.log(
      JSON.stringify({
        rounds: ROUNDS,
        count: SIZES.count,
        warmup: SIZES.warmup,
        sequential: SIZES.sequential,
        ...fields,
        phases,
      }),
    )
  }
}

await main()
// Library handles must not keep a finished run alive (as in bench.ts).
process.exit(0)
