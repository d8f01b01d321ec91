import { sql } from 'kysely'
import { describe, expect, test } from '@baton/testing'
import { apiTest, delegate } from './support/api-harness.ts'

describe('Idempotency-Key on delegations', () => {
  test('a retried delegation with the same key answers the first attempt and writes nothing more', async ({
    baton,
    db,
  }) => {
    const h = await baton({ workers: 0 })
    const key = { 'idempotency-key': 'order-42:step-1' }
    const body = { name: 'scripted', prompt: '{"output":"once"}' }
    // Concurrent first uses of one key: all answer the same attempt.
    const answers = await Promise.all([1, 2, 3, 4].map(() => h.post(delegate('s-idem'), body, key)))
    expect(answers.map((a) => a.status)).toEqual([202, 202, 202, 202])
    expect(new Set(answers.map((a) => a.body.attemptId)).size).toBe(1)
    expect(new Set(answers.map((a) => a.body.agentId)).size).toBe(1)
    const rows = await sql<{ n: number }>`
      select count(*)::int as n from attempts where session_id = 's-idem'
    `.execute(db)
    expect(rows.rows[0]?.n).toBe(1)

    // The same key with another request is refused, and writes nothing.
    const reused = await h.post(delegate('s-idem'), { ...body, prompt: 'something else' }, key)
    expect(reused).toMatchObject({
      status: 409,
      body: { error: { code: 'IDEMPOTENCY_KEY_REUSED' } },
    })
    // Keys are per session.
    const elsewhere = await h.post(delegate('s-idem-2'), body, key)
    expect(elsewhere.status).toBe(202)
    expect(elsewhere.body.attemptId).not.toBe(answers[0]?.body.attemptId)
    // A malformed key is bad input.
    const bad = await h.post(delegate('s-idem'), body, {
      'idempotency-key': 'spaces are not allowed',
    })
    expect(bad).toMatchObject({ status: 400, body: { error: { code: 'VALIDATION_FAILED' } } })

    // After the attempt finished, a retried submit-and-wait answers its terminal result at once.
    await h.startWorker()
    const first = await h.get(`/v1/attempts/${answers[0]?.body.attemptId}/wait?timeoutMs=10000`)
    expect(first.body).toMatchObject({ status: 'terminal', output: 'once' })
    const started = performance.now()
    const retried = await h.post(delegate('s-idem'), { ...body, wait: { timeoutMs: 5000 } }, key)
    expect(performance.now() - started).toBeLessThan(2000)
    expect(retried).toMatchObject({
      status: 200,
      body: { status: 'terminal', output: 'once', attemptId: answers[0]?.body.attemptId },
    })
    const total = await sql<{ n: number }>`
      select count(*)::int as n from attempts where session_id in ('s-idem', 's-idem-2')
    `.execute(db)
    expect(total.rows[0]?.n).toBe(2)
  })

  apiTest(
    '50 identical concurrent keyed continuations, 100 rounds: one attempt each, never AGENT_BUSY',
    async ({ api: h, db }) => {
      const first = await h.post(delegate('s-cont'), { name: 'scripted', prompt: '{"hang":true}' })
      const agentId = first.body.agentId as string
      let previous = first.body.attemptId as string
      for (let round = 0; round < 100; round += 1) {
        // The agent's last attempt ends (a queued cancel is terminal at once), then 50 callers send
        // the same continuation under one key at the same moment.
        expect((await h.post(`/v1/attempts/${previous}/cancel`, {})).status).toBe(202)
        const body = { name: 'scripted', prompt: '{"hang":true}', agentId }
        const key = { 'idempotency-key': `continue-${round}` }
        const answers = await Promise.all(
          Array.from({ length: 50 }, () => h.post(delegate('s-cont'), body, key)),
        )
        const statuses = answers.map((a) => `${a.status} ${a.body.error?.code ?? ''}`.trim())
        expect(new Set(statuses), `round ${round}`).toEqual(new Set(['202']))
        const attempts = new Set(answers.map((a) => a.body.attemptId as string))
        expect(attempts.size, `round ${round}`).toBe(1)
        previous = [...attempts][0] ?? ''
      }
      const rows = await sql<{ n: number }>`
      select count(*)::int as n from attempts where agent_id = ${agentId}
    `.execute(db)
      expect(rows.rows[0]?.n).toBe(101)
    },
  )
})
