// `node scripts/lib/bench/naive-service.ts`: the hand-rolled service's HTTP API. It answers the two
// calls of Baton's API the bench makes (`POST /v1/sessions/:sessionId/delegations`, with or
// without `wait`), so the bench drives it with the same client: insert a row, add the job; to
// wait, `waitUntilFinished` on the job, then read the row.
import { randomUUID } from 'node:crypto'
import { Queue, QueueEvents } from 'bullmq'
import { Redis } from 'ioredis'
import pg from 'pg'
import {
  NAIVE_API_READY_MESSAGE,
  NAIVE_QUEUE,
  naiveSettings,
  type NaiveJob,
} from './naive-ledger.ts'
import { createYardstickApp, DELEGATION_BODY_SCHEMA, type DelegationBody } from './yardstick.ts'

const settings = naiveSettings(process.env)
const pool = new pg.Pool({ connectionString: settings.databaseUrl, max: 20 })
const queue = new Queue<NaiveJob>(NAIVE_QUEUE, {
  connection: new Redis(settings.redisUrl, { maxRetriesPerRequest: null }),
  prefix: settings.queuePrefix,
})
const events = new QueueEvents(NAIVE_QUEUE, {
  connection: { url: settings.redisUrl },
  prefix: settings.queuePrefix,
})
await events.waitUntilReady()

interface DelegationRow {
  id: string
  session_id: string
  name: string
  status: string
  output: string | null
  created_at: Date
  finished_at: Date | null
}

const view = (row: DelegationRow) => ({
  attemptId: row.id,
  sessionId: row.session_id,
  name: row.name,
  status: row.status === 'completed' ? 'terminal' : row.status,
  ...(row.status === 'completed' ? { stopReason: 'completed', output: row.output } : {}),
  createdAt: row.created_at.toISOString(),
  terminalAt: row.finished_at?.toISOString() ?? null,
})

const app = createYardstickApp()

app.post<{ Params: { sessionId: string }; Body: DelegationBody }>(
  '/v1/sessions/:sessionId/delegations',
  {
    schema: { body: DELEGATION_BODY_SCHEMA },
  },
  async (request, reply) => {
    const { name, prompt, wait } = request.body
    const id = randomUUID()
    const inserted = await pool.query<DelegationRow>(
      `insert into delegations (id, session_id, name, prompt) values ($1, $2, $3, $4)
       returning id, session_id, name, status, output, created_at, finished_at`,
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
    const row = await pool.query<DelegationRow>(
      `select id, session_id, name, status, output, created_at, finished_at from delegations where id = $1`,
      [id],
    )
    return reply.status(200).send(view(row.rows[0] ?? inserted.rows[0]!))
  },
)

await app.listen({ port: settings.port, host: '127.0.0.1' })
console.log(NAIVE_API_READY_MESSAGE)

process.once('SIGTERM', () => {
  void app
    .close()
    .then(() => Promise.all([events.close(), queue.close()]))
    .then(() => pool.end())
    .then(() => process.exit(0))
})
