import { randomUUID } from 'node:crypto'
import { describe, expect, test } from '@baton/testing'
import { createAttemptQueue, enqueueAttempts } from '../src/attempt-queue.ts'
import { createRedisConnection } from '../src/connection.ts'

describe('redis connection', () => {
  test('a lone enqueue and a batch make the same jobs, and adding a job again leaves it', async ({
    redisUrl,
    queuePrefix,
  }) => {
    const connection = createRedisConnection(redisUrl, 'test', { autoPipelining: true })
    const queue = createAttemptQueue({ connection, prefix: queuePrefix })
    try {
      await enqueueAttempts(queue, [randomUUID()])
      const lone = randomUUID()
      await enqueueAttempts(queue, [lone])
      const batch = [randomUUID(), randomUUID()]
      await enqueueAttempts(queue, batch)
      for (const attemptId of batch) {
        expect((await queue.getJob(attemptId))?.data).toEqual({ attemptId })
      }
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
