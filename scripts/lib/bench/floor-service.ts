// `node scripts/lib/bench/floor-service.ts`: the queue floor's HTTP API (see floor-queue.ts). It
// answers the bench's two calls as the hand-rolled service does, with no database.
import { randomUUID } from 'node:crypto'
import { Queue, QueueEvents } from 'bullmq'
import { Redis } from 'ioredis'
import { createGroupBatcher } from '@baton/store'
import {
  FLOOR_API_READY_MESSAGE,
  FLOOR_EVENTS_KEPT,
  FLOOR_QUEUE,
  type FloorJob,
} from './floor-queue.ts'
import {
  createYardstickApp,
  DELEGATION_BODY_SCHEMA,
  queueServiceSettings,
  type DelegationBody,
} from './yardstick.ts'

const settings = queueServiceSettings(process.env)
const queue = new Queue<FloorJob>(FLOOR_QUEUE, {
  connection: new Redis(settings.redisUrl, { maxRetriesPerRequest: null }),
  prefix: settings.queuePrefix,
  streams: { events: { maxLen: FLOOR_EVENTS_KEPT } },
  defaultJobOptions: { removeOnComplete: true },
})
const events = new QueueEvents(FLOOR_QUEUE, {
  connection: { url: settings.redisUrl },
  prefix: settings.queuePrefix,
})
await events.waitUntilReady()
const enqueues = createGroupBatcher(
  (jobs: { id: string; data: FloorJob }[]) =>
    queue.addBulk(jobs.map(({ id, data }) => ({ name: 'run', data, opts: { jobId: id } }))),
  { maxBatch: 256, maxInFlight: 1 },
)

/**
 * Waiting calls by job id. A call registers before its job is added, as Baton's API subscribes to
 * its doorbell before the enqueue: asking BullMQ after the add (`waitUntilFinished`) loses the
 * race to a no-op job that completes and is removed first, and then reads as not finished.
 */
const waiters = new Map<string, (output: unknown) => void>()
events.on('completed', ({ jobId, returnvalue }) => waiters.get(jobId)?.(returnvalue))

/** Resolves with the job's output on its `completed` event, or `undefined` after `timeoutMs`. */
function completion(jobId: string, timeoutMs: number): Promise<{ output: unknown } | undefined> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      waiters.delete(jobId)
      resolve(undefined)
    }, timeoutMs)
    waiters.set(jobId, (output) => {
      clearTimeout(timer)
      waiters.delete(jobId)
      resolve({ output })
    })
  })
}

const app = createYardstickApp()

app.post<{ Params: { sessionId: string }; Body: DelegationBody }>(
  '/v1/sessions/:sessionId/delegations',
  { schema: { body: DELEGATION_BODY_SCHEMA } },
  async (request, reply) => {
    const { name, prompt, wait } = request.body
    const attemptId = randomUUID()
    const done = wait === undefined ? undefined : completion(attemptId, wait.timeoutMs)
    await enqueues.submit({ id: attemptId, data: { prompt } })
    if (done === undefined)
      return reply.status(202).send({ agentId: attemptId, attemptId, status: 'accepted' })
    const view = { attemptId, sessionId: request.params.sessionId, name }
    const finished = await done
    // Not finished within the bound: the floor keeps no record to answer from.
    if (finished === undefined) return reply.status(200).send({ ...view, status: 'queued' })
    return reply
      .status(200)
      .send({ ...view, status: 'terminal', stopReason: 'completed', output: finished.output })
  },
)

await app.listen({ port: settings.port, host: '127.0.0.1' })
console.log(FLOOR_API_READY_MESSAGE)

process.once('SIGTERM', () => {
  void app
    .close()
    .then(() => Promise.all([events.close(), queue.close()]))
    .then(() => process.exit(0))
})
