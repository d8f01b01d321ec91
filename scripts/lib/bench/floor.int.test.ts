import { createBatonClient, BatonApiError, type BatonClient } from '@baton/client'
import type { AppProcess } from '@baton/testing/processes'
import { eventually, expect, freePort, test } from '@baton/testing'
import { floorLedger, startFloorService } from './floor.ts'
import { FLOOR_EVENTS_KEPT, FLOOR_QUEUE } from './floor-queue.ts'
import { NOOP_PROMPT } from './http-load.ts'
import { measureCancels } from './cancel.ts'

/** The floor's API and `workers` workers on this test's Redis and prefix, and a client for it. */
async function startFloor(
  ctx: { readonly redisUrl: string; readonly queuePrefix: string },
  workers: number,
): Promise<{ services: AppProcess[]; client: BatonClient }> {
  const port = await freePort()
  const env = {
    REDIS_URL: ctx.redisUrl,
    QUEUE_PREFIX: ctx.queuePrefix,
    PORT: String(port),
    WORKER_CONCURRENCY: '10',
  }
  const services = await startFloorService(env, workers)
  return { services, client: createBatonClient({ baseUrl: `http://127.0.0.1:${port}` }) }
}

test('the queue floor answers the bench through HTTP, and its reader counts every delegation from the event stream', async ({
  redisUrl,
  queuePrefix,
  redis,
}) => {
  const { services, client } = await startFloor({ redisUrl, queuePrefix }, 1)
  const connection = redis()
  const ledger = floorLedger(connection, queuePrefix)
  const started = Date.now()
  try {
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

test('the queue floor cancels a running child through its bell, and its pending wait answers aborted', async ({
  redisUrl,
  queuePrefix,
  redis,
}) => {
  // Two workers: each cancel bell reaches both, and only the one holding the job aborts it.
  const { services, client } = await startFloor({ redisUrl, queuePrefix }, 2)
  const connection = redis()
  const ledger = floorLedger(connection, queuePrefix)
  try {
    const one = await measureCancels(client, 3, false, [])
    expect(one.latencies).toHaveLength(3)
    expect(one.notAborted).toBe(0)
    const burst = await measureCancels(client, 8, true, [])
    expect(burst.latencies).toHaveLength(8)
    expect(burst.notAborted).toBe(0)
    // Aborted jobs leave nothing open behind them.
    await eventually(async () => ((await ledger.openCount()) === 0 ? true : undefined), {
      what: 'the floor queue to drain',
    })

    // A child that is not told to hang is not held, and an unknown job is a 404.
    const waited = await client.delegateAndWait(
      { sessionId: 's', name: 'scripted', prompt: NOOP_PROMPT },
      10_000,
    )
    expect(waited).toMatchObject({ status: 'terminal', stopReason: 'completed' })
    const missing = await client.wait('no-such-job', 1_000).catch((error: unknown) => error)
    expect(missing).toBeInstanceOf(BatonApiError)
    expect((missing as BatonApiError).status).toBe(404)
  } finally {
    await connection.quit()
    for (const s of services) await s.close()
  }
})
