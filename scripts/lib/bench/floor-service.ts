// `node scripts/lib/bench/floor-service.ts`: the queue floor's HTTP API (see floor-queue.ts). It
// answers the bench's two calls as the hand-rolled service does, with no database, and the
// cancel measurement's calls (read, wait, cancel) for a running child. With `DATABASE_URL`, it
// accepts each delegation into Baton's ledger before the enqueue (see floor-with-ledger.ts).
import { randomUUID } from 'node:crypto'
import { Queue, QueueEvents, QueueEventsProducer } from 'bullmq'
import { Redis } from 'ioredis'
import { createRedisConnection, type StreamListener } from '@baton/queue'
import { createGroupBatcher } from '@baton/store'
import {
  FLOOR_ABORTED,
  FLOOR_API_READY_MESSAGE,
  FLOOR_COMMANDS,
  FLOOR_EVENTS_KEPT,
  FLOOR_QUEUE,
  type FloorJob,
} from './floor-queue.ts'
import { floorApiLedger } from './floor-ledgers.ts'
import { floorSettlements } from './floor-with-ledger.ts'
import {
  createYardstickApp,
  DELEGATION_BODY_SCHEMA,
  queueServiceSettings,
  type DelegationBody,
} from './yardstick.ts'

const settings = queueServiceSettings(process.env)
const ledger = floorApiLedger(process.env)
const accept = ledger?.accept
const queue = new Queue<FloorJob>(FLOOR_QUEUE, {
  // With the ledger, on Baton's own queue connection (see floor-with-ledger.ts).
  connection:
    ledger === undefined
      ? new Redis(settings.redisUrl, { maxRetriesPerRequest: null })
      : createRedisConnection(settings.redisUrl, 'floor-api', { autoPipelining: true }),
  prefix: settings.queuePrefix,
  streams: { events: { maxLen: FLOOR_EVENTS_KEPT } },
  defaultJobOptions: { removeOnComplete: true, removeOnFail: true },
})
const commands = new QueueEventsProducer(FLOOR_COMMANDS, {
  connection: new Redis(settings.redisUrl, { maxRetriesPerRequest: null }),
  prefix: settings.queuePrefix,
})
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
/** How a job ended; from a bell, the attempt's whole terminal view. */
type Ending = { readonly stopReason: string; readonly output: unknown } & Record<string, unknown>
const waiters = new Map<string, Set<(ending: Ending) => void>>()
const end = (jobId: string, ending: Ending): void => {
  for (const wake of waiters.get(jobId) ?? []) wake(ending)
}
// A wait answers from the queue's `completed` and `failed` events; with the ledger, as Baton's
// waits do, from Baton's settlement bell, which the worker rings after each commit.
let events: QueueEvents | undefined
let bells: StreamListener | undefined
if (ledger === undefined) {
  events = new QueueEvents(FLOOR_QUEUE, {
    connection: { url: settings.redisUrl },
    prefix: settings.queuePrefix,
  })
  await events.waitUntilReady()
  events.on('completed', ({ jobId, returnvalue }) => {
    end(jobId, { stopReason: 'completed', output: returnvalue })
  })
  events.on('failed', ({ jobId, failedReason }) => {
    end(jobId, { stopReason: failedReason === FLOOR_ABORTED ? 'aborted' : 'error', output: '' })
  })
} else {
  bells = await floorSettlements(
    { redisUrl: settings.redisUrl, prefix: settings.queuePrefix },
    ({ attemptId, view }) => end(attemptId, view),
  )
}

/**
 * Registers for the job's end now and resolves with it on its `completed` or `failed` event, or
 * with `undefined` after `timeoutMs` (or once `cancel` is called).
 */
function ending(
  jobId: string,
  timeoutMs: number,
): { readonly done: Promise<Ending | undefined>; readonly cancel: () => void } {
  let settle: (value: Ending | undefined) => void = () => {}
  const done = new Promise<Ending | undefined>((resolve) => {
    settle = resolve
  })
  const set = waiters.get(jobId) ?? new Set()
  waiters.set(jobId, set)
  const finish = (value: Ending | undefined): void => {
    clearTimeout(timer)
    set.delete(finish)
    if (set.size === 0) waiters.delete(jobId)
    settle(value)
  }
  const timer = setTimeout(() => finish(undefined), timeoutMs)
  set.add(finish)
  return { done, cancel: () => finish(undefined) }
}

/** BullMQ's job states as the bench reads them: `running` once a worker holds the job. */
const STATUS_OF_STATE: Record<string, string> = { active: 'running', completed: 'terminal' }
const statusOf = (state: string): string => STATUS_OF_STATE[state] ?? 'accepted'

const app = createYardstickApp()

app.post<{ Params: { sessionId: string }; Body: DelegationBody }>(
  '/v1/sessions/:sessionId/delegations',
  { schema: { body: DELEGATION_BODY_SCHEMA } },
  async (request, reply) => {
    const { name, prompt, wait } = request.body
    const attemptId =
      accept === undefined
        ? randomUUID()
        : await accept({ sessionId: request.params.sessionId, name, prompt })
    const done = wait === undefined ? undefined : ending(attemptId, wait.timeoutMs).done
    await enqueues.submit({ id: attemptId, data: { prompt } })
    if (done === undefined)
      return reply.status(202).send({ agentId: attemptId, attemptId, status: 'accepted' })
    const view = { attemptId, sessionId: request.params.sessionId, name }
    const finished = await done
    // Not finished within the bound: the floor keeps no record to answer from.
    if (finished === undefined) return reply.status(200).send({ ...view, status: 'queued' })
    return reply.status(200).send({ ...view, status: 'terminal', ...finished })
  },
)

const NOT_FOUND = { error: { code: 'NOT_FOUND', message: 'no such job' } }
interface AttemptParams {
  attemptId: string
}

// An open job's state; a job that ended was removed, so it reads as missing.
app.get<{ Params: AttemptParams }>('/v1/attempts/:attemptId', async (request, reply) => {
  const { attemptId } = request.params
  const job = await queue.getJob(attemptId)
  if (job === undefined) return reply.status(404).send(NOT_FOUND)
  return reply.status(200).send({ attemptId, status: statusOf(await job.getState()) })
})

// One bounded wait on an open job, registered before the job is looked up, so its end is not
// missed in between.
app.get<{ Params: AttemptParams; Querystring: { timeoutMs: number } }>(
  '/v1/attempts/:attemptId/wait',
  {
    schema: {
      querystring: {
        type: 'object',
        required: ['timeoutMs'],
        properties: { timeoutMs: { type: 'integer', minimum: 0, maximum: 600000 } },
      },
    },
  },
  async (request, reply) => {
    const { attemptId } = request.params
    const pending = ending(attemptId, request.query.timeoutMs)
    const job = await queue.getJob(attemptId)
    if (job === undefined) {
      pending.cancel()
      return reply.status(404).send(NOT_FOUND)
    }
    const finished = await pending.done
    if (finished === undefined) return reply.status(200).send({ attemptId, status: 'running' })
    return reply.status(200).send({ attemptId, status: 'terminal', ...finished })
  },
)

// The bell alone: no record first, so a cancel for a job no worker holds yet is lost (Baton
// records every request in its ledger before it rings).
app.post<{ Params: AttemptParams }>('/v1/attempts/:attemptId/cancel', async (request, reply) => {
  const { attemptId } = request.params
  await commands.publishEvent({ eventName: 'cancel', jobId: attemptId })
  return reply.status(202).send({ attemptId, outcome: 'cancel_requested' })
})

await app.listen({ port: settings.port, host: '127.0.0.1' })
console.log(FLOOR_API_READY_MESSAGE)

process.once('SIGTERM', () => {
  void app
    .close()
    .then(() =>
      Promise.all([
        events?.close(),
        commands.close(),
        queue.close(),
        bells?.close(),
        ledger?.close(),
      ]),
    )
    .then(() => process.exit(0))
})
