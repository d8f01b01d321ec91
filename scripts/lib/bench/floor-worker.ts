// `node scripts/lib/bench/floor-worker.ts`: the queue floor's worker process (see floor-queue.ts).
// It runs the bench's no-op child and records nothing.
import { Worker } from 'bullmq'
import { Redis } from 'ioredis'
import { FLOOR_QUEUE, FLOOR_WORKER_READY_MESSAGE, type FloorJob } from './floor-queue.ts'
import { noopChildOutput, queueServiceSettings } from './yardstick.ts'

const settings = queueServiceSettings(process.env)
const worker = new Worker<FloorJob, string>(
  FLOOR_QUEUE,
  async (job) => noopChildOutput(job.data.prompt),
  {
    connection: new Redis(settings.redisUrl, { maxRetriesPerRequest: null }),
    prefix: settings.queuePrefix,
    concurrency: settings.concurrency,
  },
)
await worker.waitUntilReady()
console.log(FLOOR_WORKER_READY_MESSAGE)

process.once('SIGTERM', () => {
  void worker.close().then(() => process.exit(0))
})
