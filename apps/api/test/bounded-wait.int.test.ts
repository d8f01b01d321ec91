import { sql } from 'kysely'
import type { SettledDetail } from '@baton/contracts'
import { createLogger } from '@baton/observability'
import { announceSettled, createSettlementPublisher, type SettlementPublisher } from '@baton/queue'
import {
  claimAttempt,
  commitTerminalsReturning,
  toAttemptView,
  type AttemptRecord,
  type Db,
} from '@baton/store'
import { describe, expect } from '@baton/testing'
import { apiTest, delegate, type ApiHarness } from './support/api-harness.ts'

const quiet = createLogger({ service: 'test', level: 'silent' })
const done = { stopReason: 'completed', output: 'from the bell', failureCategory: null }

describe('bounded waits answered by the settlement bell', () => {
  bellTest(
    'a bell carrying the committed view answers a wait and a submit-and-wait with the bytes a read answers, without reading the attempt back',
    async ({ bell: h, db }) => {
      const { publisher } = h
      // A wait on an existing attempt reads it twice (before and after subscribing), then not again.
      const running = await accepted(h.harness, 's-bell')
      const generation = await claim(db, running)
      h.reads = 0
      const waited = text(h.harness, `/v1/attempts/${running}/wait?timeoutMs=20000`)
      await expect.poll(() => h.reads, { timeout: 5_000 }).toBe(2)
      const record = await commit(db, running, generation)
      await announceSettled(publisher, running, quiet, detailOf(record))
      const waitAnswer = await waited
      expect(h.reads).toBe(2)
      expect(waitAnswer).toBe(await text(h.harness, `/v1/attempts/${running}`))
      expect(JSON.parse(waitAnswer)).toMatchObject({ status: 'terminal', output: 'from the bell' })

      // Submit-and-wait subscribes before it enqueues, so it reads nothing at all.
      h.reads = 0
      const submitted = fetch(`${h.harness.base}${delegate('s-bell-submit')}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...h.harness.auth },
        body: JSON.stringify({ name: 'scripted', prompt: 'x', wait: { timeoutMs: 20_000 } }),
      }).then((r) => r.text())
      const attemptId = await acceptedIn(db, 's-bell-submit')
      const record2 = await commit(db, attemptId, await claim(db, attemptId))
      await announceSettled(publisher, attemptId, quiet, detailOf(record2))
      const submitAnswer = await submitted
      expect(h.reads).toBe(0)
      expect(submitAnswer).toBe(await text(h.harness, `/v1/attempts/${attemptId}`))
    },
  )

  bellTest(
    'a view from another namespace, of another attempt, or malformed is no answer: the wait reads the ledger',
    async ({ bell: h, db }) => {
      const { publisher } = h
      const other = await accepted(h.harness, 's-other')
      const otherRecord = await commit(db, other, await claim(db, other))
      const wrongDetails: ((record: AttemptRecord) => SettledDetail)[] = [
        (record) => ({ ...detailOf(record), namespaceId: 'another-namespace' }),
        () => detailOf(otherRecord),
        (record) => ({ ...detailOf(record), view: { ...toAttemptView(record), status: 'done' } }),
      ]
      for (const wrong of wrongDetails) {
        const attemptId = await accepted(h.harness, 's-wrong')
        const generation = await claim(db, attemptId)
        h.reads = 0
        const waited = text(h.harness, `/v1/attempts/${attemptId}/wait?timeoutMs=20000`)
        await expect.poll(() => h.reads, { timeout: 5_000 }).toBe(2)
        const record = await commit(db, attemptId, generation)
        await announceSettled(publisher, attemptId, quiet, wrong(record))
        const answer = await waited
        expect(h.reads).toBe(3)
        expect(answer).toBe(await text(h.harness, `/v1/attempts/${attemptId}`))
        expect(JSON.parse(answer)).toMatchObject({ attemptId, status: 'terminal' })
      }
    },
  )
})

interface Bell {
  readonly harness: ApiHarness
  readonly publisher: SettlementPublisher
  /** The API's reads of attempts (the one statement that reads an attempt's view) so far. */
  reads: number
}

/** A test given an API whose reads of attempts are counted, and a publisher of settlements. */
const bellTest = apiTest.extend<{ bell: Bell }>({
  bell: async ({ inProcessApi, redisUrl, queuePrefix }, use) => {
    const publisher = createSettlementPublisher({
      redisUrl: redisUrl,
      prefix: queuePrefix,
    })
    const counted = { reads: 0 }
    const harness = await inProcessApi(
      {},
      {
        onQuery: (text) => {
          if (text.includes('steering_delivered')) counted.reads += 1
        },
      },
    )
    await use(Object.assign(counted, { harness, publisher }))
    await publisher.close()
  },
})

async function accepted(h: ApiHarness, session: string): Promise<string> {
  const answer = await h.post(delegate(session), { name: 'scripted', prompt: 'x' })
  expect(answer.status).toBe(202)
  return answer.body.attemptId as string
}

/** The attempt a submit-and-wait in `session` accepted, once it is in the ledger. */
async function acceptedIn(db: Db, session: string): Promise<string> {
  let attemptId: string | undefined
  await expect
    .poll(
      async () => {
        const rows = await sql<{ id: string }>`
          select id from attempts where session_id = ${session}
        `.execute(db)
        attemptId = rows.rows[0]?.id
        return attemptId
      },
      { timeout: 5_000 },
    )
    .toBeDefined()
  return attemptId as string
}

/** Claims the attempt as a worker would; answers its generation. */
async function claim(db: Db, attemptId: string): Promise<number> {
  const claimed = await claimAttempt(db, { attemptId, ownerId: 'test-owner', leaseTtlMs: 60_000 })
  if (claimed.kind !== 'claimed') throw new Error(claimed.kind)
  return claimed.attempt.ownerGeneration
}

/** The worker's terminal commit, answering the attempt as it left it. */
async function commit(db: Db, attemptId: string, generation: number): Promise<AttemptRecord> {
  const [answer] = await commitTerminalsReturning(db, [
    { attemptId, ownerId: 'test-owner', ownerGeneration: generation, result: done },
  ])
  if (answer?.record === undefined) throw new Error(`no record: ${answer?.outcome}`)
  return answer.record
}

function detailOf(record: AttemptRecord): SettledDetail {
  return { namespaceId: record.namespaceId, view: toAttemptView(record) }
}

async function text(h: ApiHarness, path: string): Promise<string> {
  const response = await fetch(`${h.base}${path}`, { headers: h.auth })
  expect(response.status).toBe(200)
  return response.text()
}
