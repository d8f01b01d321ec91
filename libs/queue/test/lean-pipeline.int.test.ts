import { Queue } from 'bullmq'
import { Pipeline, type Redis } from 'ioredis'
import { describe, expect, test } from '@baton/testing'
import { bytesSurvivingScavenges } from '@baton/testing/young-generation'
import { createRedisConnection } from '../src/connection.ts'
import { leanPipeline } from '../src/lean-pipeline.ts'

/** A connection with BullMQ's scripts defined on it, as the API's and the workers' are. */
async function scriptedConnection(redisUrl: string, prefix: string) {
  const connection = createRedisConnection(redisUrl, 'test', { autoPipelining: true })
  const queue = new Queue('lean', { connection, prefix })
  await queue.waitUntilReady()
  return {
    connection,
    queue,
    close: async () => {
      await queue.close()
      connection.disconnect()
    },
  }
}

/** An object's own property names, `length` left out, sorted. */
function fieldsOf(pipeline: object): string[] {
  return Object.getOwnPropertyNames(pipeline)
    .filter((name) => name !== 'length')
    .sort()
}

describe('lean pipelines', () => {
  test("have exactly the fields of ioredis's pipelines, with the same values", async ({
    redisUrl,
    queuePrefix,
  }) => {
    const { connection, close } = await scriptedConnection(redisUrl, queuePrefix)
    try {
      const stock = new Pipeline(connection) as unknown as Record<string, unknown>
      const lean = leanPipeline(connection) as unknown as Record<string, unknown>
      // An ioredis upgrade that adds, renames or drops a field fails here.
      expect(fieldsOf(lean)).toEqual(fieldsOf(stock))
      expect(Object.keys((connection as unknown as { scriptsSet: object }).scriptsSet).length).toBe(
        Object.keys(stock._shaToScript as object).length,
      )
      for (const name of fieldsOf(stock)) {
        if (['promise', 'resolve', 'reject'].includes(name)) continue
        expect(lean[name], name).toEqual(stock[name])
      }
      expect(lean.redis).toBe(connection)
      expect(lean.options).toBe(connection.options)
      expect(lean).toBeInstanceOf(Pipeline)
    } finally {
      await close()
    }
  })

  test('run commands and scripts, report their length, and are what the connection builds', async ({
    redisUrl,
    queuePrefix,
  }) => {
    const { connection, queue, close } = await scriptedConnection(redisUrl, queuePrefix)
    try {
      const key = `${queuePrefix}:lean`
      const pipeline = connection.pipeline().set(key, '1').incr(key).get(key)
      expect(pipeline.length).toBe(3)
      expect(await pipeline.exec()).toEqual([
        [null, 'OK'],
        [null, 2],
        [null, '2'],
      ])
      expect(connection.pipeline([['get', key]]).length).toBe(1)
      // BullMQ's scripts through the connection's auto-pipelining, which builds lean pipelines:
      // the two counts leave in one.
      await queue.add('job', { n: 1 })
      expect(
        await Promise.all([queue.getJobCounts('waiting'), queue.getJobCounts('active')]),
      ).toEqual([{ waiting: 1 }, { active: 0 }])
    } finally {
      await close()
    }
  })

  test("die young; ioredis's own pipelines outlive scavenges", async ({
    redisUrl,
    queuePrefix,
  }) => {
    const { connection, close } = await scriptedConnection(redisUrl, queuePrefix)
    try {
      const built = (make: (redis: Redis) => unknown) =>
        bytesSurvivingScavenges(() => make(connection))
      // The control: each pipeline (about 10 KB with BullMQ's scripts) is kept by a hidden class
      // of its own until a full collection. If this fails, ioredis fixed it and lean pipelines can go.
      expect(await built((redis) => new Pipeline(redis))).toBeGreaterThan(4_000)
      expect(await built((redis) => redis.pipeline())).toBeLessThan(500)
    } finally {
      await close()
    }
  })
})
