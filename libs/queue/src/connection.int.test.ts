import { Queue, Worker } from 'bullmq'
import type { Redis } from 'ioredis'
import { describe, expect, test } from '@baton/testing'
import { createRedisConnection, UNPIPELINED_COMMANDS } from './connection.ts'

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
})
