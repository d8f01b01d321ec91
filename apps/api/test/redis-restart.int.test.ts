import { randomUUID } from 'node:crypto'
import { Redis } from 'ioredis'
import { createAttemptQueue, enqueueAttempt } from '@baton/queue'
import { acceptDelegations } from '@baton/store'
import {
  describe,
  expect,
  hasRedisServerBinary,
  startRedisServer,
  test,
  transitionEvents,
} from '@baton/testing'
import { delegate } from './support/api-harness.ts'

/** One short-lived connection: a command against the private Redis, then quit. */
async function withRedis<T>(url: string, run: (redis: Redis) => Promise<T>): Promise<T> {
  const redis = new Redis(url, { maxRetriesPerRequest: 1 })
  try {
    return await run(redis)
  } finally {
    await redis.quit()
  }
}

// A restart needs a Redis of the test's own (the shared one must not die under other tests), so
// this runs only where a `redis-server` binary can be started.
describe('Redis restart (private redis-server)', () => {
  test.skipIf(!hasRedisServerBinary())(
    'Redis killed and restarted empty: the running child commits once, the lost job is re-enqueued, and the API and worker recover',
    { timeout: 180_000 },
    async ({ baton, queuePrefix, track, db }) => {
      const privateRedis = track(await startRedisServer())
      // One slot: while the slow child holds it, a second job can only wait in Redis.
      const h = await baton({ redisUrl: privateRedis.url, workerEnv: { WORKER_CONCURRENCY: '1' } })

      const slow = await h.post(delegate('s-restart'), {
        name: 'scripted',
        prompt: '{"output":"survived","delayMs":4000}',
      })
      expect(slow.status).toBe(202)
      const slowId = slow.body.attemptId as string
      await h.untilRunning(slowId, 20_000)

      // Accepted and enqueued as the API would, but behind the slow child: its job only waits.
      const queuedId = randomUUID()
      await acceptDelegations(db, [
        {
          namespaceId: 'default',
          sessionId: 's-restart',
          name: 'scripted',
          prompt: [{ type: 'text', text: '{"output":"requeued"}' }],
          metadata: {},
          attemptId: queuedId,
          newAgentId: randomUUID(),
        },
      ])
      const queue = createAttemptQueue({
        connection: { url: privateRedis.url },
        prefix: queuePrefix,
      })
      await enqueueAttempt(queue, queuedId)
      expect(await queue.getJobState(queuedId)).toBe('waiting')
      await queue.close()

      const before = await withRedis(privateRedis.url, async (redis) => {
        await redis.set(`${queuePrefix}:restart-marker`, '1')
        return serverRunId(redis)
      })
      await privateRedis.restart()
      // A new process without the old keys: the restart lost every job and connection.
      const after = await withRedis(privateRedis.url, async (redis) => ({
        runId: await serverRunId(redis),
        marker: await redis.exists(`${queuePrefix}:restart-marker`),
      }))
      expect(after.runId).not.toBe(before)
      expect(after.marker).toBe(0)
      // The outage happened mid-run: the slow child has not finished yet.
      expect((await h.get(`/v1/attempts/${slowId}`)).body.status).toBe('running')

      // Its lease lives in Postgres: the owner commits, and the API's listener, reconnected, is
      // rung (one bounded wait, no polling).
      const slowView = await h.get(`/v1/attempts/${slowId}/wait?timeoutMs=45000`)
      expect(slowView.body).toMatchObject({
        status: 'terminal',
        stopReason: 'completed',
        output: 'survived',
      })
      expect(await transitionEvents(db, slowId)).toEqual(['accepted', 'claimed', 'committed'])

      // The waiting job vanished with Redis; the ledger still said accepted, so the reconciler
      // enqueued it again and it ran once.
      const queuedView = await h.get(`/v1/attempts/${queuedId}/wait?timeoutMs=45000`)
      expect(queuedView.body).toMatchObject({
        status: 'terminal',
        stopReason: 'completed',
        output: 'requeued',
      })
      expect(await transitionEvents(db, queuedId)).toEqual(['accepted', 'claimed', 'committed'])
      expect(h.worker.output()).toContain('accepted attempts had no job; re-enqueued')

      // The API's queue and doorbell connections recovered: submit-and-wait works end to end.
      const fresh = await h.post(delegate('s-restart'), {
        name: 'scripted',
        prompt: '{"output":"after the restart"}',
        wait: { timeoutMs: 45_000 },
      })
      expect(fresh.status).toBe(200)
      expect(fresh.body).toMatchObject({
        status: 'terminal',
        stopReason: 'completed',
        output: 'after the restart',
      })

      // A cancel after the restart still reaches the child through the worker.
      const hanging = await h.post(delegate('s-restart'), {
        name: 'scripted',
        prompt: '{"hang":true}',
      })
      const hangingId = hanging.body.attemptId as string
      await h.untilRunning(hangingId, 20_000)
      const cancel = await h.post(`/v1/attempts/${hangingId}/cancel`, {})
      expect(cancel).toMatchObject({ status: 202, body: { outcome: 'cancel_requested' } })
      const cancelled = await h.get(`/v1/attempts/${hangingId}/wait?timeoutMs=45000`)
      // `aborted` from the scripted child is only produced when its AbortSignal fired mid-hang.
      expect(cancelled.body).toMatchObject({
        status: 'terminal',
        stopReason: 'aborted',
        failureCategory: 'cancelled',
      })
      expect(await transitionEvents(db, hangingId)).toEqual([
        'accepted',
        'claimed',
        'cancel_requested',
        'committed',
      ])

      await h.close()
      await privateRedis.close()
    },
  )
})

async function serverRunId(redis: Redis): Promise<string | undefined> {
  const info = await redis.info('server')
  return /^run_id:(\w+)/m.exec(info)?.[1]
}
