import { sql } from 'kysely'
import { BatonApiError } from '@baton/client'
import { createAttemptQueue, type AttemptQueue } from '@baton/queue'
import { describe, eventually, expect, test, transitionEvents } from '@baton/testing'
import { apiTest, delegate, rowCounts } from './support/api-harness.ts'

describe('HTTP API with real workers', () => {
  test('delegate → worker → terminal → bounded wait returns it', async ({ baton, db }) => {
    const h = await baton()
    const accepted = await h.post(delegate('s-e2e'), {
      name: 'scripted',
      prompt: '{"output":"hello from the child"}',
    })
    expect(accepted.status).toBe(202)
    expect(accepted.body).toMatchObject({ status: 'accepted' })
    const waited = await h.get(`/v1/attempts/${accepted.body.attemptId}/wait?timeoutMs=5000`)
    expect(waited.status).toBe(200)
    expect(waited.body).toMatchObject({
      status: 'terminal',
      stopReason: 'completed',
      output: 'hello from the child',
      outputBytes: 20,
      agentId: accepted.body.agentId,
    })
    expect(waited.body.digest).toMatch(/^baton\.result\.v1:sha256:[0-9a-f]{64}$/)
    expect(await transitionEvents(db, accepted.body.attemptId)).toEqual([
      'accepted',
      'claimed',
      'committed',
    ])
  })

  test('submit-and-wait returns within its bound, finished or not', async ({ baton }) => {
    const h = await baton()
    const inTime = await h.post(delegate('s-wait'), {
      name: 'scripted',
      prompt: '{"output":"quick","delayMs":50}',
      wait: { timeoutMs: 5000 },
    })
    expect(inTime.status).toBe(200)
    expect(inTime.body).toMatchObject({
      status: 'terminal',
      stopReason: 'completed',
      output: 'quick',
    })

    const started = performance.now()
    const late = await h.post(delegate('s-wait'), {
      name: 'scripted',
      prompt: '{"output":"slow","delayMs":3000}',
      wait: { timeoutMs: 300 },
    })
    const elapsed = performance.now() - started
    expect(late.status).toBe(202)
    expect(['accepted', 'running']).toContain(late.body.status)
    expect(elapsed).toBeGreaterThanOrEqual(290)
    expect(elapsed).toBeLessThan(2500)
    // Not finished is not an error: a later bounded wait returns the result.
    const finished = await h.get(`/v1/attempts/${late.body.attemptId}/wait?timeoutMs=10000`)
    expect(finished.body).toMatchObject({ status: 'terminal', output: 'slow' })
  })

  test('cancel while queued: aborted terminal at once, and no worker ever runs it', async ({
    baton,
    redisUrl,
    queuePrefix,
    db,
  }) => {
    const h = await baton({ workers: 0 })
    const accepted = await h.post(delegate('s-cancel'), {
      name: 'scripted',
      prompt: '{"output":"never"}',
    })
    const started = performance.now()
    const cancel = await h.post(`/v1/attempts/${accepted.body.attemptId}/cancel`, {
      reason: 'changed my mind',
    })
    expect(cancel).toMatchObject({ status: 202, body: { outcome: 'cancelled_queued' } })
    const view = await h.get(`/v1/attempts/${accepted.body.attemptId}/wait?timeoutMs=1000`)
    expect(performance.now() - started).toBeLessThan(1000)
    expect(view.body).toMatchObject({
      status: 'terminal',
      stopReason: 'aborted',
      cancelRequested: true,
    })
    await h.startWorker()
    // The queued job is delivered and acknowledged without running.
    const queue = createAttemptQueue({ connection: { url: redisUrl }, prefix: queuePrefix })
    await untilJobCompleted(queue, accepted.body.attemptId)
    await queue.close()
    expect(await transitionEvents(db, accepted.body.attemptId)).toEqual([
      'accepted',
      'cancelled_queued',
    ])
    // A cancel may carry no body at all.
    const bare = await fetch(`${h.base}/v1/attempts/${accepted.body.attemptId}/cancel`, {
      method: 'POST',
      headers: h.auth,
    })
    expect(bare.status).toBe(409)
    const again = await h.post(`/v1/attempts/${accepted.body.attemptId}/cancel`, {})
    expect(again).toMatchObject({ status: 409, body: { error: { code: 'ATTEMPT_TERMINAL' } } })
  })

  test('cancel while running: the child sees its AbortSignal and the attempt is aborted within a second', async ({
    baton,
    db,
  }) => {
    // Heartbeats far apart: the cancel must travel by queue event, not by the fallback.
    const h = await baton({ workerEnv: { LEASE_TTL_MS: '30000', HEARTBEAT_INTERVAL_MS: '10000' } })
    const { attemptId } = await h.delegateRunning('s-cancel')
    const started = performance.now()
    const cancel = await h.post(`/v1/attempts/${attemptId}/cancel`, {})
    expect(cancel.body).toMatchObject({ outcome: 'cancel_requested' })
    const view = await h.get(`/v1/attempts/${attemptId}/wait?timeoutMs=1000`)
    expect(performance.now() - started).toBeLessThan(1000)
    // `aborted` from the scripted child is only produced when its AbortSignal fired mid-hang.
    expect(view.body).toMatchObject({
      status: 'terminal',
      stopReason: 'aborted',
      failureCategory: 'cancelled',
    })
    expect(await transitionEvents(db, attemptId)).toEqual([
      'accepted',
      'claimed',
      'cancel_requested',
      'committed',
    ])
  })

  test('a worker killed with SIGKILL mid-run: one process-loss terminal, never run again', async ({
    baton,
    redisUrl,
    queuePrefix,
    db,
  }) => {
    const h = await baton()
    const { attemptId } = await h.delegateRunning('s-kill')
    expect(await h.killWorker()).toBe('SIGKILL')
    await h.startWorker()
    const view = await h.get(`/v1/attempts/${attemptId}/wait?timeoutMs=10000`)
    expect(view.body).toMatchObject({
      status: 'terminal',
      stopReason: 'error',
      failureCategory: 'process_lost',
      output: '',
    })
    // The dead worker's job is still locked in Redis; a redelivery of the attempt (as BullMQ's
    // stalled-job check would make) is acknowledged without running it.
    const queue = createAttemptQueue({ connection: { url: redisUrl }, prefix: queuePrefix })
    const redelivery = `${attemptId}-redelivered`
    await queue.add('attempt', { attemptId }, { jobId: redelivery })
    await untilJobCompleted(queue, redelivery)
    await queue.close()
    expect(await transitionEvents(db, attemptId)).toEqual(['accepted', 'claimed', 'process_lost'])
  })
})

describe('steering through the API', () => {
  test('steer: messages reach the running child once each and in order; terminal and unknown attempts are refused', async ({
    baton,
    db,
  }) => {
    // Heartbeats far apart: delivery must come from the steer event.
    const h = await baton({ workerEnv: { LEASE_TTL_MS: '30000', HEARTBEAT_INTERVAL_MS: '10000' } })
    const { attemptId } = await h.delegateRunning('s-steer', { awaitSteering: 2 })
    const first = await h.post(`/v1/attempts/${attemptId}/steer`, { content: 'look in the cellar' })
    const second = await h.post(`/v1/attempts/${attemptId}/steer`, {
      content: [{ type: 'text', text: 'then the attic' }],
    })
    expect(first).toMatchObject({ status: 202, body: { attemptId, sequence: 1 } })
    expect(second).toMatchObject({ status: 202, body: { sequence: 2 } })
    const view = await h.get(`/v1/attempts/${attemptId}/wait?timeoutMs=5000`)
    expect(view.body).toMatchObject({
      status: 'terminal',
      stopReason: 'completed',
      output: 'look in the cellar\nthen the attic',
    })
    const late = await h.post(`/v1/attempts/${attemptId}/steer`, { content: 'too late' })
    expect(late).toMatchObject({ status: 409, body: { error: { code: 'ATTEMPT_TERMINAL' } } })
    const unknown = await h.post('/v1/attempts/00000000-0000-4000-8000-000000000000/steer', {
      content: 'x',
    })
    expect(unknown).toMatchObject({ status: 404, body: { error: { code: 'ATTEMPT_NOT_FOUND' } } })
    const empty = await h.post(`/v1/attempts/${attemptId}/steer`, { content: '' })
    expect(empty).toMatchObject({ status: 400, body: { error: { code: 'VALIDATION_FAILED' } } })
    const messages = await sql<{ sequence: number; delivered: boolean }>`
      select sequence, delivered_at is not null as delivered from attempt_messages where attempt_id = ${attemptId} order by 1
    `.execute(db)
    expect(messages.rows).toEqual([
      { sequence: 1, delivered: true },
      { sequence: 2, delivered: true },
    ])
  })
})

describe('typed client', () => {
  test('the client delegates, waits, steers and cancels, and turns error answers into typed errors', async ({
    baton,
  }) => {
    const h = await baton()
    const client = h.client
    const done = await client.delegateAndWait(
      { sessionId: 's-client', name: 'scripted', prompt: 'ping' },
      5000,
    )
    expect(done).toMatchObject({ status: 'terminal', stopReason: 'completed', output: 'ping' })
    const steered = await client.delegate({
      sessionId: 's-client',
      name: 'scripted',
      prompt: '{"awaitSteering":1}',
    })
    await h.untilRunning(steered.attemptId)
    expect(await client.steer(steered.attemptId, 'pong')).toEqual({
      attemptId: steered.attemptId,
      sequence: 1,
    })
    expect(await client.wait(steered.attemptId, 5000)).toMatchObject({
      status: 'terminal',
      output: 'pong',
    })
    const error = await client.cancel(steered.attemptId).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(BatonApiError)
    expect(error).toMatchObject({ status: 409, code: 'ATTEMPT_TERMINAL' })
  })
})

describe('bad input is rejected with a typed error and writes nothing', () => {
  const cases: { name: string; session: string; body: unknown; status: number; code: string }[] = [
    {
      name: 'unknown field',
      session: 's-bad',
      body: { name: 'scripted', prompt: 'x', surprise: true },
      status: 400,
      code: 'VALIDATION_FAILED',
    },
    {
      name: 'wrong type',
      session: 's-bad',
      body: { name: 'scripted', prompt: 42 },
      status: 400,
      code: 'VALIDATION_FAILED',
    },
    {
      name: 'empty prompt',
      session: 's-bad',
      body: { name: 'scripted', prompt: '   ' },
      status: 400,
      code: 'VALIDATION_FAILED',
    },
    {
      name: 'empty prompt blocks',
      session: 's-bad',
      body: { name: 'scripted', prompt: [] },
      status: 400,
      code: 'VALIDATION_FAILED',
    },
    {
      name: 'unknown metadata key',
      session: 's-bad',
      body: { name: 'scripted', prompt: 'x', metadata: { systemPrompt: 'obey' } },
      status: 400,
      code: 'VALIDATION_FAILED',
    },
    {
      name: 'bad session id',
      session: 'bad%20session',
      body: { name: 'scripted', prompt: 'x' },
      status: 400,
      code: 'VALIDATION_FAILED',
    },
    {
      name: 'wait above the maximum',
      session: 's-bad',
      body: { name: 'scripted', prompt: 'x', wait: { timeoutMs: 3_600_000 } },
      status: 400,
      code: 'VALIDATION_FAILED',
    },
    {
      name: 'unknown subagent',
      session: 's-bad',
      body: { name: 'nobody', prompt: 'x' },
      status: 400,
      code: 'UNKNOWN_SUBAGENT',
    },
    {
      name: 'unknown agentId',
      session: 's-bad',
      body: { name: 'scripted', prompt: 'x', agentId: '00000000-0000-4000-8000-000000000000' },
      status: 404,
      code: 'AGENT_NOT_FOUND',
    },
    {
      name: 'body over the size limit',
      session: 's-bad',
      body: { name: 'scripted', prompt: 'x'.repeat(70_000) },
      status: 413,
      code: 'PAYLOAD_TOO_LARGE',
    },
    {
      name: 'malformed JSON',
      session: 's-bad',
      body: '{"name":',
      status: 400,
      code: 'VALIDATION_FAILED',
    },
  ]
  apiTest.for(cases)(
    '$name → $status $code',
    async ({ session, body, status, code }, { api: h, db }) => {
      const before = await rowCounts(db)
      const response = await h.post(delegate(session), body)
      expect(response.status).toBe(status)
      expect(response.body).toMatchObject({ error: { code } })
      expect(typeof response.body.error.message).toBe('string')
      expect(await rowCounts(db)).toEqual(before)
    },
  )

  apiTest(
    'an agent that already has a non-terminal attempt → 409 AGENT_BUSY, nothing written',
    async ({ api: h, db }) => {
      const first = await h.post(delegate('s-busy'), { name: 'scripted', prompt: 'x' })
      const before = await rowCounts(db)
      const second = await h.post(delegate('s-busy'), {
        name: 'scripted',
        prompt: 'y',
        agentId: first.body.agentId,
      })
      expect(second).toMatchObject({ status: 409, body: { error: { code: 'AGENT_BUSY' } } })
      expect(await rowCounts(db)).toEqual(before)
      // Once terminal, the same agent continues with a fresh attempt id.
      await h.post(`/v1/attempts/${first.body.attemptId}/cancel`, {})
      const third = await h.post(delegate('s-busy'), {
        name: 'scripted',
        prompt: 'z',
        agentId: first.body.agentId,
      })
      expect(third.status).toBe(202)
      expect(third.body.agentId).toBe(first.body.agentId)
      expect(third.body.attemptId).not.toBe(first.body.attemptId)
    },
  )

  apiTest('attempt routes: malformed id → 400, unknown id → 404', async ({ api: h }) => {
    expect(await h.get('/v1/attempts/not-a-uuid')).toMatchObject({
      status: 400,
      body: { error: { code: 'VALIDATION_FAILED' } },
    })
    expect(
      await h.get('/v1/attempts/00000000-0000-4000-8000-000000000000/wait?timeoutMs=10'),
    ).toMatchObject({
      status: 404,
      body: { error: { code: 'ATTEMPT_NOT_FOUND' } },
    })
    expect(
      await h.get('/v1/attempts/00000000-0000-4000-8000-000000000000/wait?timeoutMs=-1'),
    ).toMatchObject({ status: 400 })
    expect(await h.get('/readyz')).toMatchObject({ status: 200, body: { status: 'ready' } })
  })
})

/**
 * Waits until an added job was delivered and acknowledged: a completed attempt job is removed at
 * once (the ledger keeps the outcome; a failed one would stay, as `failed`), so done means gone.
 */
async function untilJobCompleted(queue: AttemptQueue, jobId: string): Promise<void> {
  await eventually(async () => ((await queue.getJobState(jobId)) === 'unknown' ? true : undefined))
}
