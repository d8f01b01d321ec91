// `node scripts/lib/bench/floor-worker.ts`: the queue floor's worker process (see floor-queue.ts).
// It runs the bench's no-op child, or a hanging one until its cancel bell, and records nothing;
// with `DATABASE_URL`, it claims each attempt before the child runs and commits its terminal after
// (see floor-with-ledger.ts).
import { QueueEvents, Worker, type Job } from 'bullmq'
import { Redis } from 'ioredis'
import { FailureCategory } from '@baton/contracts'
import { AttemptWorker, createRedisConnection } from '@baton/queue'
import type { TerminalResultInput } from '@baton/store'
import {
  FLOOR_ABORTED,
  FLOOR_COMMANDS,
  FLOOR_QUEUE,
  FLOOR_WORKER_READY_MESSAGE,
  hangs,
  type FloorJob,
} from './floor-queue.ts'
import { floorWorkerLedger } from './floor-ledgers.ts'
import { noopChildOutput, queueServiceSettings } from './yardstick.ts'

const settings = queueServiceSettings(process.env)
const executions = floorWorkerLedger(process.env, {
  redisUrl: settings.redisUrl,
  prefix: settings.queuePrefix,
})

/** Resolves when `signal` fires. */
function untilAborted(signal: AbortSignal | undefined): Promise<void> {
  if (signal === undefined) return new Promise(() => {})
  if (signal.aborted) return Promise.resolve()
  return new Promise((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }))
}

async function processJob(
  job: Job<FloorJob, string>,
  _token?: string,
  signal?: AbortSignal,
): Promise<string> {
  const jobId = job.id ?? ''
  const generation = await executions?.claim(jobId)
  const finish = async (result: TerminalResultInput): Promise<void> => {
    if (generation !== undefined) await executions?.commit(jobId, generation, result)
  }
  if (!hangs(job.data.prompt)) {
    const output = noopChildOutput(job.data.prompt)
    await finish({ stopReason: 'completed', output, failureCategory: null })
    return output
  }
  await untilAborted(signal)
  await finish({ stopReason: 'aborted', output: '', failureCategory: FailureCategory.Cancelled })
  throw new Error(FLOOR_ABORTED)
}

const options = { prefix: settings.queuePrefix, concurrency: settings.concurrency }
// With the ledger, on Baton's own worker class and connection (see floor-with-ledger.ts).
const worker =
  executions === undefined
    ? new Worker<FloorJob, string>(FLOOR_QUEUE, processJob, {
        ...options,
        connection: new Redis(settings.redisUrl, { maxRetriesPerRequest: null }),
      })
    : new AttemptWorker<FloorJob, string>(FLOOR_QUEUE, processJob, {
        ...options,
        connection: createRedisConnection(settings.redisUrl, 'floor-worker', {
          autoPipelining: true,
        }),
      })
// Every worker hears every bell; only the one running the job has it to cancel.
const commands = new QueueEvents(FLOOR_COMMANDS, {
  connection: { url: settings.redisUrl },
  prefix: settings.queuePrefix,
})
commands.on(
  'cancel' as never,
  (({ jobId }: { jobId: string }) => {
    worker.cancelJob(jobId, FLOOR_ABORTED)
  }) as never,
)
await Promise.all([worker.waitUntilReady(), commands.waitUntilReady()])
console.log(FLOOR_WORKER_READY_MESSAGE)

process.once('SIGTERM', () => {
  void Promise.all([commands.close(), worker.close()])
    .then(() => executions?.close())
    .then(() => process.exit(0))
})
