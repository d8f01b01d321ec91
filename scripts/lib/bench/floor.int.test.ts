import { createBatonClient, BatonApiError } from '@baton/client'
import { eventually, expect, freePort, test } from '@baton/testing'
import { floorLedger, startFloorService } from './floor.ts'
import { FLOOR_EVENTS_KEPT, FLOOR_QUEUE } from './floor-queue.ts'
import { NOOP_PROMPT } from './http-load.ts'

test('the queue floor answers the bench through HTTP, and its reader counts every delegation from the event stream', async ({
  redisUrl,
  queuePrefix,
  redis,
}) => {
  const port = await freePort()
  const env = {
    REDIS_URL: redisUrl,
    QUEUE_PREFIX: queuePrefix,
    PORT: String(port),
    WORKER_CONCURRENCY: '10',
  }
  const services = await startFloorService(env, 1)
  const connection = redis()
  const ledger = floorLedger(connection, queuePrefix)
  const started = Date.now()
  try {
    const client = createBatonClient({ baseUrl: `http://127.0.0.1:${port}` })
    const input = { sessionId: 's', name: 'scripted', prompt: NOOP_PROMPT }
    const accepted = await Promise.all(Array.from({ length: 30 }, () => client.delegate(input)))
    expect(new Set(accepted.map((a) => a.attemptId)).size).toBe(30)

    // Every wait answers its job's output, however soon after the add the no-op job completes.
    for (let i = 0; i < 50; i += 1) {
      const waited = await client.delegateAndWait(input, 10_000)
      expect(waited).toMatchObject({ status: 'terminal', stopReason: 'completed', output: 'ok' })
    }

    // A body the route refuses enqueues nothing.
    const refused = await client
      .delegate({ sessionId: 's', name: '', prompt: NOOP_PROMPT })
      .catch((error: unknown) => error)
    expect(refused).toBeInstanceOf(BatonApiError)
    expect((refused as BatonApiError).status).toBe(400)

    await eventually(async () => ((await ledger.openCount()) === 0 ? true : undefined), {
      what: 'the floor queue to drain',
    })
    const span = await ledger.span()
    expect(span.n).toBe(80)
    expect(span.seconds).toBeGreaterThan(0)
    expect(span.seconds).toBeLessThan((Date.now() - started) / 1000)
    // The throughput phase's events must all stay in the stream for `span` to count them.
    expect(
      Number(await connection.hget(`${queuePrefix}:${FLOOR_QUEUE}:meta`, 'opts.maxLenEvents')),
    ).toBe(FLOOR_EVENTS_KEPT)
  } finally {
    await connection.quit()
    for (const s of services) await s.close()
  }
})
