// `NAIVE_ROLE=api|worker node scripts/lib/bench/naive-service.ts`: the hand-rolled service, the
// bench's yardstick — what a team builds with Fastify, BullMQ and Postgres when it wants "delegate
// and wait" and nothing more: no leases, fences, audit, batching or cancellation.
// The API answers the two calls of Baton's API the bench makes (`POST
// /v1/sessions/:sessionId/delegations`, with or without `wait`): insert a row, add the job; to
// wait, `waitUntilFinished` on the job, then read the row. The worker runs the same no-op child as
// Baton's `scripted` prompt (answer the script's `output`) and records it with one update.
import { randomUUID } from 'node:crypto'
import { Queue, QueueEvents, Worker } from 'bullmq'
import Fastify from 'fastify'
import pg from 'pg'
import { NAIVE_READY_MESSAGES } from './naive-shared.ts'

const env = process.env
const role = env.NAIVE_ROLE === 'worker' ? 'worker' : 'api'
const connection = { url: env.REDIS_URL ?? '', maxRetriesPerRequest: null }
const prefix = env.QUEUE_PREFIX ?? ''
const pool = new pg.Pool({ connectionString: env.DATABASE_URL, max: role === 'api' ? 20 : 10 })
const QUEUE = 'delegations'

interface Job {
  readonly id: string
  readonly prompt: unknown
}

/** The body the bench sends, validated by Fastify. */
const BODY_SCHEMA = {
  type: 'object',
  required: ['name', 'prompt'],
  properties: {
    name: { type: 'string', minLength: 1 },
    prompt: {},
    wait: {
      type: 'object',
      required: ['timeoutMs'],
      properties: { timeoutMs: { type: 'integer' } },
    },
  },
} as const

async function api(): Promise<() => Promise<unknown>> {
  const queue = new Queue<Job>(QUEUE, { connection, prefix })
  const events = new QueueEvents(QUEUE, { connection, prefix })
  await events.waitUntilReady()
  const app = Fastify({ logger: { level: 'warn' } })
  app.post<{
    Params: { sessionId: string }
    Body: { name: string; prompt: unknown; wait?: { timeoutMs: number } }
  }>(
    '/v1/sessions/:sessionId/delegations',
    { schema: { body: BODY_SCHEMA } },
    async (request, reply) => {
      const { name, prompt, wait } = request.body
      const id = randomUUID()
      await pool.query(
        'insert into delegations (id, session_id, name, prompt) values ($1, $2, $3, $4)',
        [id, request.params.sessionId, name, JSON.stringify(prompt)],
      )
      const job = await queue.add('run', { id, prompt }, { jobId: id })
      if (wait === undefined)
        return reply.status(202).send({ agentId: id, attemptId: id, status: 'accepted' })
      try {
        await job.waitUntilFinished(events, wait.timeoutMs)
      } catch {
        // Not finished within the bound (or failed): answer with what the row says now.
      }
      // The row as Baton's attempt view names it.
      const row = await pool.query(
        `select id as "attemptId", session_id as "sessionId", name, output,
                case status when 'completed' then 'terminal' else status end as status,
                case status when 'completed' then 'completed' end as "stopReason",
                created_at as "createdAt", finished_at as "terminalAt"
         from delegations where id = $1`,
        [id],
      )
      return reply.status(200).send(row.rows[0])
    },
  )
  await app.listen({ port: Number(env.PORT), host: '127.0.0.1' })
  return () => app.close().then(() => Promise.all([events.close(), queue.close()]))
}

/** The same no-op child as Baton's `scripted` prompt: answer the script's `output`. */
function noopChild(prompt: unknown): string {
  try {
    const script = JSON.parse(String(prompt)) as { output?: unknown }
    return typeof script.output === 'string' ? script.output : String(prompt)
  } catch {
    return String(prompt)
  }
}

async function worker(): Promise<() => Promise<unknown>> {
  const running = new Worker<Job, string>(
    QUEUE,
    async (job) => {
      const output = noopChild(job.data.prompt)
      await pool.query(
        `update delegations set status = 'completed', output = $2, finished_at = now() where id = $1`,
        [job.data.id, output],
      )
      return output
    },
    {
      connection,
      prefix,
      concurrency: Number(env.WORKER_CONCURRENCY ?? '100'),
      removeOnComplete: { age: 3600 },
    },
  )
  await running.waitUntilReady()
  return () => running.close()
}

const close = role === 'api' ? await api() : await worker()
console.log(NAIVE_READY_MESSAGES[role])
process.once('SIGTERM', () => {
  void close()
    .then(() => pool.end())
    .then(() => process.exit(0))
})
