import { randomUUID } from 'node:crypto'
import { QueueEventsProducer } from 'bullmq'
import { Redis } from 'ioredis'
import { QueueName, type ApiBell, type AttemptSettlement } from '@baton/contracts'
import { describe, expect, test } from '@baton/testing'
import {
  announceClaimable,
  createSettlementListener,
  createSettlementPublisher,
} from '../src/attempt-settlements.ts'
import { createStreamPublisher } from '../src/event-stream.ts'

describe('event streams', () => {
  test('a burst of 300 settlements leaves in a few entries and reaches the listener one by one', async ({
    redisUrl,
    queuePrefix,
  }) => {
    const { heard, listener } = await hearSettlements(redisUrl, queuePrefix)
    const publisher = createSettlementPublisher({
      redisUrl: redisUrl,
      prefix: queuePrefix,
    })
    const redis = new Redis(redisUrl)
    try {
      const ids = Array.from({ length: 300 }, () => randomUUID())
      await Promise.all(
        ids.map((attemptId) => publisher.publish({ eventName: 'settled', attemptId })),
      )
      // The first event leaves alone; the rest gathered behind it, at most 256 ids an entry.
      const entries = await redis.xlen(`${queuePrefix}:${QueueName.AttemptSettlements}:events`)
      expect(entries).toBeGreaterThanOrEqual(2)
      expect(entries).toBeLessThanOrEqual(3)
      await expect.poll(() => heard.length, { timeout: 5_000 }).toBe(ids.length)
      expect(new Set(heard)).toEqual(new Set(ids))
    } finally {
      await publisher.close()
      await listener.close()
      redis.disconnect()
    }
  })

  test('an entry naming one attemptId is still heard, and a malformed id is dropped alone', async ({
    redisUrl,
    queuePrefix,
  }) => {
    const { heard, listener } = await hearSettlements(redisUrl, queuePrefix)
    const raw = new QueueEventsProducer(QueueName.AttemptSettlements, {
      connection: { url: redisUrl },
      prefix: queuePrefix,
    })
    try {
      const single = randomUUID()
      const good = randomUUID()
      await raw.publishEvent({ eventName: 'settled', attemptId: single })
      await raw.publishEvent({ eventName: 'settled', attemptIds: `not-a-uuid,${good}` })
      await expect.poll(() => heard, { timeout: 5_000 }).toEqual([single, good])
    } finally {
      await raw.close()
      await listener.close()
    }
  })

  test('a detail reaches the listener beside its id; details of about 64 KiB fill an entry; a malformed detail drops alone', async ({
    redisUrl,
    queuePrefix,
  }) => {
    const { events, listener } = await hearSettlements(redisUrl, queuePrefix)
    const publisher = createSettlementPublisher({
      redisUrl: redisUrl,
      prefix: queuePrefix,
    })
    const raw = new QueueEventsProducer(QueueName.AttemptSettlements, {
      connection: { url: redisUrl },
      prefix: queuePrefix,
    })
    const redis = new Redis(redisUrl)
    try {
      const stream = `${queuePrefix}:${QueueName.AttemptSettlements}:events`
      const before = await redis.xlen(stream)
      const detail = (n: number) => ({ namespaceId: 'default', view: { output: 'x'.repeat(n) } })
      const published: AttemptSettlement[] = [
        { eventName: 'settled', attemptId: randomUUID(), detail: detail(40_000) },
        { eventName: 'settled', attemptId: randomUUID() },
        { eventName: 'settled', attemptId: randomUUID(), detail: detail(40_000) },
        { eventName: 'settled', attemptId: randomUUID(), detail: detail(10) },
      ]
      await Promise.all(published.map((event) => publisher.publish(event)))
      // Published in one tick: the third's detail would take the first entry past 64 KiB.
      expect((await redis.xlen(stream)) - before).toBe(2)
      await expect.poll(() => events.length, { timeout: 5_000 }).toBe(published.length)
      expect(events).toEqual(published)

      const [unreadable, refused] = [randomUUID(), randomUUID()]
      await raw.publishEvent({ eventName: 'settled', attemptIds: unreadable, details: '[{' })
      await raw.publishEvent({
        eventName: 'settled',
        attemptIds: refused,
        details: JSON.stringify([{ namespaceId: 7 }]),
      })
      await expect.poll(() => events.length, { timeout: 5_000 }).toBe(published.length + 2)
      expect(events.slice(published.length)).toEqual([
        { eventName: 'settled', attemptId: unreadable },
        { eventName: 'settled', attemptId: refused },
      ])
    } finally {
      await publisher.close()
      await raw.close()
      await listener.close()
      redis.disconnect()
    }
  })

  test('a claimable bell reaches the listener with its session, beside settlements; one without its session is dropped', async ({
    redisUrl,
    queuePrefix,
  }) => {
    const { events, listener } = await hearSettlements(redisUrl, queuePrefix)
    const publisher = createSettlementPublisher({ redisUrl, prefix: queuePrefix })
    const raw = new QueueEventsProducer(QueueName.AttemptSettlements, {
      connection: { url: redisUrl },
      prefix: queuePrefix,
    })
    try {
      const session = { namespaceId: 'default', sessionId: 's-1' }
      const [settled, claimable, bare] = [randomUUID(), randomUUID(), randomUUID()]
      await announceClaimable(publisher, claimable, session, { warn: () => {} })
      await raw.publishEvent({ eventName: 'claimable', attemptIds: bare })
      await publisher.publish({ eventName: 'settled', attemptId: settled })
      await expect.poll(() => events.length, { timeout: 5_000 }).toBe(2)
      expect(events).toEqual([
        { eventName: 'claimable', attemptId: claimable, detail: session },
        { eventName: 'settled', attemptId: settled },
      ])
    } finally {
      await publisher.close()
      await raw.close()
      await listener.close()
    }
  })

  test('a stream is trimmed to about its most events as entries are added', async ({
    redisUrl,
    queuePrefix,
  }) => {
    const stream = `trimmed-${randomUUID()}`
    const publisher = createStreamPublisher(stream, {
      redisUrl,
      prefix: queuePrefix,
      maxEvents: 10,
    })
    const redis = new Redis(redisUrl)
    try {
      // One entry each: every publish waits for the last one's entry.
      for (let i = 0; i < 300; i += 1) {
        await publisher.publish({ eventName: 'settled', attemptId: randomUUID() })
      }
      // Trimming is approximate: Redis drops whole nodes of its stream (100 entries by default).
      const kept = await redis.xlen(`${queuePrefix}:${stream}:events`)
      expect(kept).toBeGreaterThanOrEqual(10)
      expect(kept).toBeLessThan(200)
    } finally {
      await publisher.close()
      redis.disconnect()
    }
  })

  test('close adds what was published before it, then closes the connection', async ({
    redisUrl,
    queuePrefix,
  }) => {
    const { heard, listener } = await hearSettlements(redisUrl, queuePrefix)
    const publisher = createSettlementPublisher({ redisUrl, prefix: queuePrefix })
    try {
      const first = randomUUID()
      await publisher.publish({ eventName: 'settled', attemptId: first })
      // Published in the tick of close: one entry begins before close, the next behind it.
      const ids = [randomUUID(), randomUUID()]
      const published = ids.map((attemptId) =>
        publisher.publish({ eventName: 'settled', attemptId }),
      )
      await publisher.close()
      await Promise.all(published)
      await expect.poll(() => heard, { timeout: 5_000 }).toEqual([first, ...ids])
      await expect(
        publisher.publish({ eventName: 'settled', attemptId: randomUUID() }),
      ).rejects.toThrow()
    } finally {
      await listener.close()
    }
  })

  test('an event published right after ready() is heard, however soon', async ({
    redisUrl,
    queuePrefix,
  }) => {
    const redis = new Redis(redisUrl)
    const key = `${queuePrefix}:${QueueName.AttemptSettlements}:events`
    try {
      for (let round = 0; round < 10; round += 1) {
        // Entries from before the listener are not heard; the first one after ready() is.
        await redis.xadd(key, '*', 'event', 'settled', 'attemptIds', randomUUID())
        const { heard, listener } = await hearSettlements(redisUrl, queuePrefix)
        try {
          // Added on a connection already open, the moment ready() resolves.
          const id = randomUUID()
          await redis.xadd(key, '*', 'event', 'settled', 'attemptIds', id)
          await expect.poll(() => heard, { timeout: 5_000 }).toEqual([id])
        } finally {
          await listener.close()
        }
      }
    } finally {
      redis.disconnect()
    }
  })

  test('a handler that throws on one event does not stop the listener', async ({
    redisUrl,
    queuePrefix,
  }) => {
    const heard: string[] = []
    const listener = createSettlementListener({
      redisUrl,
      prefix: queuePrefix,
      onEvent: (event) => {
        heard.push(event.attemptId)
        if (heard.length === 1) throw new Error('this handler fails once')
      },
      blockingTimeoutMs: 200,
    })
    const publisher = createSettlementPublisher({ redisUrl, prefix: queuePrefix })
    try {
      await listener.ready()
      const ids = [randomUUID(), randomUUID()]
      for (const attemptId of ids) await publisher.publish({ eventName: 'settled', attemptId })
      await expect.poll(() => heard, { timeout: 5_000 }).toEqual(ids)
    } finally {
      await publisher.close()
      await listener.close()
    }
  })

  test('close does not wait for a Redis that does not answer: what waits for it fails', async ({
    queuePrefix,
  }) => {
    // Nothing listens on port 1: the connection keeps retrying and its entries keep waiting.
    const publisher = createSettlementPublisher({
      redisUrl: 'redis://127.0.0.1:1',
      prefix: queuePrefix,
    })
    const published = publisher.publish({ eventName: 'settled', attemptId: randomUUID() })
    const outcome = published.then(
      () => 'added',
      () => 'failed',
    )
    await publisher.close()
    expect(await outcome).toBe('failed')
  })
})

/** A settlement listener that keeps the events it hears (and their attempt ids), in order. */
async function hearSettlements(redisUrl: string, prefix: string) {
  const heard: string[] = []
  const events: ApiBell[] = []
  const listener = createSettlementListener({
    redisUrl,
    prefix,
    onEvent: (event) => {
      heard.push(event.attemptId)
      events.push(event)
    },
    blockingTimeoutMs: 200,
  })
  await listener.ready()
  return { heard, events, listener }
}
