import { randomUUID } from 'node:crypto'
import { createAttemptQueue } from '@baton/queue'
import { describe, expect } from '@baton/testing'
import { apiTest, delegate, rowCounts } from './support/api-harness.ts'

const batch = (session: string): string => `${delegate(session)}/batch`
const instant = (i: number) => ({
  name: 'scripted',
  prompt: JSON.stringify({ output: `item ${i}` }),
})

describe('POST /v1/sessions/:sessionId/delegations/batch', () => {
  apiTest(
    '500 items: one accept statement, one addBulk, 500 attempts answered in order',
    async ({ inProcessApi, redisUrl, queuePrefix, db }) => {
      const accepts: string[] = []
      const h = await inProcessApi(
        {},
        {
          onQuery: (sql) => (sql.includes('insert into attempts') ? accepts.push(sql) : undefined),
        },
      )
      const queue = createAttemptQueue({ connection: { url: redisUrl }, prefix: queuePrefix })
      try {
        const items = Array.from({ length: 500 }, (_, i) => instant(i))
        const answer = await h.post(batch('b-500'), { items })
        expect(answer.status).toBe(200)
        const results = answer.body.results as { status: number; body: Record<string, unknown> }[]
        expect(results).toHaveLength(500)
        for (const result of results)
          expect(result).toMatchObject({
            status: 202,
            body: { status: 'accepted', replayed: false },
          })
        expect(accepts).toHaveLength(1)
        expect((await rowCounts(db)).attempts).toBe(500)
        // Every accepted attempt has its job (no worker runs here, so they all wait).
        const ids = new Set(results.map((r) => r.body.attemptId as string))
        expect(ids.size).toBe(500)
        const waiting = await queue.getWaiting(0, 1000)
        expect(new Set(waiting.map((job) => job.id))).toEqual(ids)
      } finally {
        await queue.close()
      }
    },
  )

  apiTest(
    'mixed items answer one by one, and a refused item writes nothing and fails no other',
    async ({ api: h, db }) => {
      const start = await rowCounts(db)
      const answer = await h.post(batch('b-mixed'), {
        items: [
          instant(0),
          { name: 'scripted' },
          { name: 'nobody', prompt: 'x' },
          instant(3),
          { name: 'scripted', prompt: '{"fail":true}' },
          { name: 'scripted', prompt: 'x', agentId: randomUUID() },
          { name: 'scripted', prompt: 'bad\u0000' },
        ],
      })
      expect(answer.status).toBe(200)
      const results = answer.body.results as { status: number; body: any }[]
      expect(results.map((r) => [r.status, r.body.error?.code ?? r.body.status])).toEqual([
        [202, 'accepted'],
        [400, 'VALIDATION_FAILED'],
        [400, 'UNKNOWN_SUBAGENT'],
        [202, 'accepted'],
        [400, 'VALIDATION_FAILED'],
        [404, 'AGENT_NOT_FOUND'],
        [400, 'VALIDATION_FAILED'],
      ])
      expect(results[1]?.body.error.details.issues[0].path).toBe('body/items/1/prompt')
      expect(results[4]?.body.error.details.issues[0].path).toMatch(/^body\/items\/4\/prompt\//)
      expect((await rowCounts(db)).attempts - start.attempts).toBe(2)
      // The typed client speaks the same route.
      const viaClient = await h.client.delegateBatch('b-mixed', [
        instant(7),
        { name: 'nobody', prompt: 'x' },
      ])
      expect(viaClient.results.map((r) => r.status)).toEqual([202, 400])
    },
  )

  apiTest(
    'a repeated batch with the same keys writes nothing and answers the first attempts',
    async ({ inProcessApi, db }) => {
      const h = await inProcessApi({ BATCH_MAX_ITEMS: '60' })
      const start = await rowCounts(db)
      const items = Array.from({ length: 50 }, (_, i) => ({
        ...instant(i),
        idempotencyKey: `k-${i}`,
      }))
      const first = await h.post(batch('b-keys'), { items })
      const before = await rowCounts(db)
      const again = await h.post(batch('b-keys'), { items })
      expect(await rowCounts(db)).toEqual(before)
      expect(before.attempts - start.attempts).toBe(50)
      const ids = (answer: typeof first) =>
        (answer.body.results as { body: { attemptId: string } }[]).map((r) => r.body.attemptId)
      expect(ids(again)).toEqual(ids(first))
      for (const result of again.body.results) expect(result.body.replayed).toBe(true)
      // A key used again with another request is refused for that item alone.
      const reused = await h.post(batch('b-keys'), {
        items: [{ ...instant(99), idempotencyKey: 'k-0' }, instant(100)],
      })
      const statuses = (reused.body.results as { status: number }[]).map((r) => r.status)
      expect(statuses).toEqual([409, 202])
      // The bound is the deployment's BATCH_MAX_ITEMS.
      const tooMany = await h.post(batch('b-keys'), {
        items: Array.from({ length: 61 }, (_, i) => instant(i)),
      })
      expect(tooMany.status).toBe(400)
      expect(tooMany.body.error.code).toBe('VALIDATION_FAILED')
    },
  )
})
