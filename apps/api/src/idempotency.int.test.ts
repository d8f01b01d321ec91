import { sql } from 'kysely'
import { describe, expect, startServiceProcess, test, workerProcessEnv } from '@baton/testing'
import { delegate, startApi } from './test-support.ts'

describe('Idempotency-Key on delegations', () => {
  test('a retried delegation with the same key answers the first attempt and writes nothing more', async ({
    databaseUrl,
    redisUrl,
    queuePrefix,
    track,
    db,
  }) => {
    const ctx = { databaseUrl, redisUrl, queuePrefix }
    const h = await startApi(ctx)
    track(h.api)
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
    const worker = track(await startServiceProcess('worker', workerProcessEnv(ctx)))
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
    await worker.close()
    await h.api.close()
  })
})
