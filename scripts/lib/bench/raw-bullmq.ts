// Raw BullMQ in one round: no-op jobs added with `addBulk` and run by one worker of the HTTP
// systems' concurrency, all in the bench's own process (no HTTP, no ledger), then `sequential`
// adds each awaited with `waitUntilFinished`. Its cost is the bench process's CPU and Redis's.
import { Queue, QueueEvents, Worker } from 'bullmq'
import type { BenchContext } from './context.ts'
import { measureCost } from './counters.ts'
import type { BenchOptions } from './options.ts'
import { costFigures, rounded, waitFigures, type RoundFigures } from './rounds.ts'

const QUEUE = 'raw'
const PREFIX = 'baton-bench-raw'

export async function runRawBullmq(
  bench: BenchContext,
  options: BenchOptions,
  round: number,
): Promise<RoundFigures> {
  const connection = { url: bench.redisUrl, maxRetriesPerRequest: null }
  const queue = new Queue(QUEUE, { connection, prefix: PREFIX })
  let done = 0
  let allDone: () => void = () => {}
  const finished = new Promise<void>((resolve) => (allDone = resolve))
  const worker = new Worker(
    QUEUE,
    async () => {
      done += 1
      if (done === options.count) allDone()
    },
    { connection, prefix: PREFIX, concurrency: 100 },
  )
  const events = new QueueEvents(QUEUE, { connection, prefix: PREFIX })
  try {
    await Promise.all([worker.waitUntilReady(), events.waitUntilReady()])
    const { result: perSecond, cost } = await measureCost(
      bench,
      [process.pid],
      undefined,
      async () => {
        const started = performance.now()
        for (let i = 0; i < options.count; i += 1000) {
          const n = Math.min(1000, options.count - i)
          await queue.addBulk(
            Array.from({ length: n }, (_, k) => ({
              name: 'noop',
              data: { i: i + k },
              opts: { removeOnComplete: true },
            })),
          )
        }
        await finished
        return options.count / ((performance.now() - started) / 1000)
      },
    )
    const latencies: number[] = []
    for (let i = 0; i < options.sequential; i += 1) {
      // Kept when complete, so that `waitUntilFinished` finds a job that finished before it looked.
      const sent = performance.now()
      const job = await queue.add('noop', { seq: i })
      await job.waitUntilFinished(events, 10_000)
      latencies.push(performance.now() - sent)
    }
    return {
      system: 'raw',
      round,
      figures: rounded({
        per_s: perSecond,
        ...waitFigures(latencies.sort((a, b) => a - b)),
        ...costFigures(cost, options.count),
      }),
    }
  } finally {
    await worker.close()
    await events.close()
    await queue.close()
    await bench.redis.flushall()
  }
}
