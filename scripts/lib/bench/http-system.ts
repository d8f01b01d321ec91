// One HTTP system (the hand-rolled service or Baton) in one round, on a fresh database:
//   1. throughput: its processes start, `count` delegations come from `clients` callers, and the
//      phase's CPU and Redis commands are sampled around them; the processes stop, and the
//      database's transactions are read once their backends have exited (counters.ts);
//   2. latency: its processes start again, `sequential` submit-and-waits run one after another
//      (after a few untimed ones), then whatever else the system measures (Baton: its cancels, its
//      hosted turns and the ledger audit).
import { createServer, type AddressInfo } from 'node:net'
import { createBatonClient, type BatonClient } from '@baton/client'
import type { AppProcess } from '@baton/testing/processes'
import { dropDatabase, withDatabase } from '../services.ts'
import type { BenchContext } from './context.ts'
import { measureCost, settledTransactions } from './counters.ts'
import { sequentialWaits, submitAll, type LedgerTable } from './http-load.ts'
import type { BenchOptions } from './options.ts'
import { costFigures, rounded, waitFigures, type Figures, type RoundFigures } from './rounds.ts'

/** Children each worker process runs at once; Baton's cancels need that many of theirs running. */
const WORKER_CONCURRENCY = 100
/** Fresh processes' first calls open connections and compile their paths: these are not timed. */
const UNTIMED_WAITS = 20

export interface HttpSystem {
  readonly name: 'naive' | 'baton'
  readonly ledger: LedgerTable
  /** Env its processes need besides the bench's (files it writes first). */
  env?(): Promise<Record<string, string>>
  /** Creates the system's database afresh; answers the API key its route expects. */
  prepare(databaseUrl: string): Promise<string>
  /** Spawns one of its processes with `env`; `ready` resolves when it serves. */
  spawn(role: 'api' | 'worker', name: string, env: Record<string, string>): AppProcess
  /** What it measures after the submit-and-waits, on the same processes. */
  after?(run: {
    readonly client: BatonClient
    readonly databaseUrl: string
    /** Every delegation accepted so far; the system adds its own. */
    readonly accepted: string[]
    readonly sequential: number
    readonly hostedTurns: number
  }): Promise<Figures>
}

export async function freeLocalPort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  await new Promise<void>((resolve) => server.close(() => resolve()))
  return port
}

/** Runs `use` while the system's API and `workers` worker processes serve; stops them after. */
async function withProcesses<T>(
  system: HttpSystem,
  env: Record<string, string>,
  workers: number,
  use: (processes: readonly AppProcess[]) => Promise<T>,
): Promise<T> {
  const processes = [
    system.spawn('api', 'api', env),
    ...Array.from({ length: workers }, (_, i) => system.spawn('worker', `worker-${i + 1}`, env)),
  ]
  try {
    await Promise.all(processes.map((p) => p.ready))
    return await use(processes)
  } finally {
    await Promise.all(processes.map((p) => p.close()))
  }
}

export async function runHttpSystem(
  bench: BenchContext,
  options: BenchOptions,
  system: HttpSystem,
  round: number,
): Promise<RoundFigures> {
  // One database per bench process, so two benches on one server never share one.
  const database = `baton_bench_${system.name}_${process.pid}`
  const databaseUrl = withDatabase(bench.serverUrl, database)
  const port = await freeLocalPort()
  const env = {
    DATABASE_URL: databaseUrl,
    REDIS_URL: bench.redisUrl,
    QUEUE_PREFIX: `baton-bench-${system.name}`,
    PORT: String(port),
    WORKER_CONCURRENCY: String(WORKER_CONCURRENCY),
    ...(await system.env?.()),
  }
  const apiKey = await system.prepare(databaseUrl)
  const client = createBatonClient({ baseUrl: `http://127.0.0.1:${port}`, apiKey })
  const accepted: string[] = []
  try {
    const transactionsBefore = await settledTransactions(bench.postgres, database)
    const throughput = await withProcesses(system, env, options.workers, (processes) =>
      measureCost(
        bench,
        processes.map((p) => p.pid),
        database,
        () => submitAll(client, options, accepted, databaseUrl, system.ledger),
      ),
    )
    const transactions =
      (await settledTransactions(bench.postgres, database)) -
      transactionsBefore -
      throughput.result.ledgerReads

    const latency = await withProcesses(system, env, options.workers, async () => {
      await sequentialWaits(client, UNTIMED_WAITS, accepted)
      const waits = await sequentialWaits(client, options.sequential, accepted)
      const after = await system.after?.({
        client,
        databaseUrl,
        accepted,
        sequential: options.sequential,
        hostedTurns: options.hostedTurns,
      })
      return { waits, after }
    })
    return {
      system: system.name,
      round,
      figures: rounded({
        per_s: throughput.result.perSecond,
        ...waitFigures(latency.waits),
        ...costFigures(throughput.cost, options.count),
        pg_xacts_per_delegation: transactions / options.count,
        ...latency.after,
      }),
    }
  } finally {
    await dropDatabase(databaseUrl)
    // The next phase starts on a Redis holding nothing of this one's.
    await bench.redis.flushall()
  }
}
