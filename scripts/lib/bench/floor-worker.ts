// `node scripts/lib/bench/floor-worker.ts`: the queue floor's worker process (see floor-queue.ts).
// It runs the bench's no-op child, or a hanging one until its cancel bell, and records nothing.
import { QueueEvents, Worker } from 'bullmq'
import { Redis } from 'ioredis'
import {
  FLOOR_ABORTED,
  FLOOR_COMMANDS,
  FLOOR_QUEUE,
  FLOOR_WORKER_READY_MESSAGE,
  hangs,
  type FloorJob,
} from './floor-queue.ts'
import { noopChildOutput, queueServiceSettings } from './yardstick.ts'

const settings = queueServiceSettings(process.env)

/** Resolves when `signal` fires. */
function untilAborted(signal: AbortSignal | undefined): Promise<void> {
  if (signal === undefined) return new Promise(() => {})
  if (signal.aborted) return Promise.resolve()
  return new Promise((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }))
}

const worker = new Worker<FloorJob, string>(
  FLOOR_QUEUE,
  async (job, _token, signal) => {
    if (!hangs(job.data.prompt)) return noopChildOutput(job.data.prompt)
    await untilAborted(signal)
    throw new Error(FLOOR_ABORTED)
  },
  {
    connection: new Redis(settings.redisUrl, { maxRetriesPerRequest: null }),
    prefix: settings.queuePrefix,
    concurrency: settings.concurrency,
  },
)
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
  void Promise.all([commands.close(), worker.close()]).then(() => process.exit(0))
})
