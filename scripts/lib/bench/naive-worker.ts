// `node scripts/lib/bench/naive-worker.ts`: the hand-rolled service's worker process. It runs the
// same no-op child as the bench's `scripted` prompt (answer the script's `output`) and records the
// result with one update: no claim, no lease, no fence.
import { Worker } from 'bullmq'
import { Redis } from 'ioredis'
import pg from 'pg'
import {
  NAIVE_QUEUE,
  NAIVE_WORKER_READY_MESSAGE,
  naiveSettings,
  type NaiveJob,
} from './naive-ledger.ts'
import { noopChildOutput } from './yardstick.ts'

const settings = naiveSettings(process.env)
const pool = new pg.Pool({ connectionString: settings.databaseUrl, max: 10 })

const worker = new Worker<NaiveJob, string>(
  NAIVE_QUEUE,
  async (job) => {
    const output = noopChildOutput(job.data.prompt)
    await pool.query(
      `update delegations set status = 'completed', output = $2, finished_at = now() where id = $1`,
      [job.data.id, output],
    )
    return output
  },
  {
    connection: new Redis(settings.redisUrl, { maxRetriesPerRequest: null }),
    prefix: settings.queuePrefix,
    concurrency: settings.concurrency,
    removeOnComplete: { age: 3600 },
  },
)
await worker.waitUntilReady()
console.log(NAIVE_WORKER_READY_MESSAGE)

process.once('SIGTERM', () => {
  void worker
    .close()
    .then(() => pool.end())
    .then(() => process.exit(0))
})
