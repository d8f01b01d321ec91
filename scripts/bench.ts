// `npm run bench [-- --rounds N] [--count N] [--clients N] [--sequential N] [--hosted-turns N]
//   [--workers N] [--systems raw,naive,baton] [--json]`
// `npm run bench -- --scale [--levels N,…] [--history N,…] [--dimensions …] [--workers N]
//   [--hold-ms N] [--cancels N] [--sequential N] [--json]`: how cost grows with the work
//   (scripts/lib/bench/scale.ts).
//
// Raw BullMQ, the hand-rolled Fastify + BullMQ + Postgres service and Baton, measured in
// alternating rounds on this machine: what each delegation costs and how long it takes, and
// Baton's figures divided by the others' of the same round; and Baton's hosted turn (a hosted
// parent's run start → its first continuation run's start). See docs/performance.md.
import { DEFAULT_DATABASE_URL } from './lib/services.ts'
import { openBenchContext, type BenchContext } from './lib/bench/context.ts'
import { runHttpSystem } from './lib/bench/http-system.ts'
import { batonSystem } from './lib/bench/baton.ts'
import { naiveSystem } from './lib/bench/naive.ts'
import {
  parseBenchCommand,
  type BenchOptions,
  type ScaleOptions,
  type SystemName,
} from './lib/bench/options.ts'
import { runRawBullmq } from './lib/bench/raw-bullmq.ts'
import { summarizeRounds, type RoundFigures } from './lib/bench/rounds.ts'
import {
  benchRecord,
  saveRecord,
  scaleRecord,
  scaleTables,
  summaryTable,
} from './lib/bench/report.ts'
import { runScale } from './lib/bench/scale.ts'

const RUN: Record<
  SystemName,
  (bench: BenchContext, options: BenchOptions, round: number) => Promise<RoundFigures>
> = {
  raw: runRawBullmq,
  naive: (bench, options, round) => runHttpSystem(bench, options, naiveSystem, round),
  baton: (bench, options, round) => runHttpSystem(bench, options, batonSystem, round),
}

const command = parseBenchCommand(process.argv.slice(2))
const log = (line: string): void => console.error(line)

async function scale(options: ScaleOptions): Promise<never> {
  log(
    `bench: scale of ${options.dimensions.join(', ')}; levels ${options.levels.join(', ')}, history ${options.history.join(', ')}, ${options.workers} workers`,
  )
  const bench = await openBenchContext(process.env.DATABASE_URL ?? DEFAULT_DATABASE_URL)
  let result
  try {
    result = await runScale(bench, options, log)
  } finally {
    await bench.close()
  }
  const line = JSON.stringify(scaleRecord(options, result))
  log('')
  for (const row of scaleTables(result)) log(row)
  log(`bench: appended to ${saveRecord(line)}`)
  if (options.json) console.log(line)
  process.exit(0)
}

if (command.kind === 'scale') await scale(command.options)
const options: BenchOptions = command.kind === 'compare' ? command.options : process.exit(2)
log(
  `bench: ${options.rounds} round${options.rounds === 1 ? '' : 's'} of ${options.systems.join(', ')}; ${options.count} delegations from ${options.clients} clients, ${options.sequential} submit-and-waits, ${options.hostedTurns} hosted turns, ${options.workers} workers`,
)
const bench = await openBenchContext(process.env.DATABASE_URL ?? DEFAULT_DATABASE_URL)
const runs: RoundFigures[] = []
try {
  for (let round = 1; round <= options.rounds; round += 1) {
    for (const system of options.systems) {
      const run = await RUN[system](bench, options, round)
      runs.push(run)
      log(`bench: round ${round} ${system} ${JSON.stringify(run.figures)}`)
    }
  }
} finally {
  await bench.close()
}
const summary = summarizeRounds(runs)
const line = JSON.stringify(benchRecord(options, summary, runs))
log('')
for (const row of summaryTable(options, summary)) log(row)
log(`bench: appended to ${saveRecord(line)}`)
if (options.json) console.log(line)
// Library handles (ioredis reconnect timers, pg pools) must not keep a finished run alive.
process.exit(0)
