// `node scripts/lib/bench/floor-service.ts`: the queue floor's HTTP API (see floor-queue.ts). It
// answers the bench's two calls as the hand-rolled service does, with no database.
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
  (jobs: FloorJob[]) => queue.addBulk(jobs.map((data) => ({ name: 'run', data }))),
  { maxBatch: 256, maxInFlight: 1 },
)

const app = createYardstickApp()

app.post<{ Params: { sessionId: string }; Body: DelegationBody }>(
  '/v1/sessions/:sessionId/delegations',
  { schema: { body: DELEGATION_BODY_SCHEMA } },
  async (request, reply) => {
    const { name, prompt, wait } = request.body
    const job = await enqueues.submit({ prompt })
    const attemptId = String(job.id)
    if (wait === undefined)
      return reply.status(202).send({ agentId: attemptId, attemptId, status: 'accepted' })
    const view = { attemptId, sessionId: request.params.sessionId, name }
    try {
      const output: unknown = await job.waitUntilFinished(events, wait.timeoutMs)
      return reply
        .status(200)
        .send({ ...view, status: 'terminal', stopReason: 'completed', output })
    } catch {
      // Not finished within the bound (or failed): the floor keeps no record to answer from.
      return reply.status(200).send({ ...view, status: 'queued' })
    }
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
