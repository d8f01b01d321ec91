import { randomUUID } from 'node:crypto'
import { Queue, Worker } from 'bullmq'
import type { Redis } from 'ioredis'
import { describe, expect, test } from '@baton/testing'
import { createAttemptQueue, enqueueAttempts } from '../src/attempt-queue.ts'
import { createRedisConnection, UNPIPELINED_COMMANDS } from '../src/connection.ts'

/** Counts the pipelines ioredis builds on `connection` (auto-pipelining builds them this way). */
function countPipelines(connection: Redis): { readonly count: number } {
  const counter = { count: 0 }
  const pipeline = connection.pipeline.bind(connection)
  connection.pipeline = (...args: Parameters<Redis['pipeline']>) => {
    counter.count += 1
    return pipeline(...args)
  }
  return counter
}

describe('redis connection', () => {
  test('every script it sends on its own is one BullMQ defines on the connection', async ({
    redisUrl,
    queuePrefix,
  }) => {
    const connection = createRedisConnection(redisUrl, 'test', { autoPipelining: true })
    const queue = new Queue('scripts', { connection, prefix: queuePrefix })
    try {
      await queue.waitUntilReady()
      const scripts = Object.keys((connection as unknown as { scriptsSet: object }).scriptsSet)
      const named = UNPIPELINED_COMMANDS.filter((name) => name.includes(':'))
      expect(named.length).toBeGreaterThan(0)
      for (const name of named) expect(scripts).toContain(name)
    } finally {
      await queue.close()
      connection.disconnect()
    }
  })

  test("a worker's job fetches build no pipeline; other commands are still auto-pipelined", async ({
    redisUrl,
    queuePrefix,
  }) => {
    const connection = createRedisConnection(redisUrl, 'test', { autoPipelining: true })
    const worker = new Worker('fetches', async () => {}, {
      connection,
      prefix: queuePrefix,
      autorun: false,
    })
    try {
      await worker.waitUntilReady()
      const pipelines = countPipelines(connection)
      for (let i = 0; i < 5; i += 1) {
        expect(await worker.getNextJob(`token-${i}`, { block: false })).toBeUndefined()
      }
      expect(pipelines.count).toBe(0)
      // The control: a command of the same connection still goes through an auto pipeline.
      await connection.get(`${queuePrefix}:absent`)
      expect(pipelines.count).toBe(1)
    } finally {
      await worker.close()
      connection.disconnect()
    }
  })

  test('a lone enqueue builds no pipeline; a batch of enqueues builds one', async ({
    redisUrl,
    queuePrefix,
  }) => {
    const connection = createRedisConnection(redisUrl, 'test', { autoPipelining: true })
    const queue = createAttemptQueue({ connection, prefix: queuePrefix })
    try {
      // The queue's first add also writes its metadata, once (an auto-pipelined `hset`).
      await enqueueAttempts(queue, [randomUUID()])
      const pipelines = countPipelines(connection)
      const lone = randomUUID()
      await enqueueAttempts(queue, [lone])
      expect(pipelines.count).toBe(0)
      // Several attempts leave together, in the one pipeline of `addBulk`.
      const batch = [randomUUID(), randomUUID()]
      await enqueueAttempts(queue, batch)
      expect(pipelines.count).toBe(1)
      // The lone job is the same job a batch makes, and adding it again leaves it as it is.
      const first = await queue.getJob(lone)
      expect(first?.data).toEqual({ attemptId: lone })
      expect(first?.opts).toMatchObject({ removeOnComplete: true, attempts: 5 })
      await enqueueAttempts(queue, [{ attemptId: lone, traceparent: 'ignored' }])
      expect((await queue.getJob(lone))?.data).toEqual({ attemptId: lone })
      expect(await queue.getJobCounts('waiting')).toEqual({ waiting: 4 })
    } finally {
      await queue.close()
      connection.disconnect()
    }
  })
})
