// A worker as a real process, stopped by a signal: its exit code and what its attempts become.
import { sql } from 'kysely'
import { getAttempt } from '@baton/store'
import { describe, expect, test } from '@baton/testing'
import { accept, enqueue } from './support/worker-harness.ts'

/** A child that notices cancellation only this long after it arrived. */
const STUBBORN_MS = 3_000

describe('worker process stop', () => {
  test('SIGTERM with a child slower than the shutdown deadline: the worker stays alive and heartbeating, exits 0 once the child ends, and its attempt is not process_lost', async ({
    baton,
    db,
    redisUrl,
    queuePrefix,
  }) => {
    const fleet = await baton({ api: false, workerEnv: { SHUTDOWN_DEADLINE_MS: '300' } })
    const { worker } = fleet
    const attemptId = await accept(db, `{"hang":true,"ignoreCancelMs":${STUBBORN_MS}}`)
    await enqueue({ redisUrl, queuePrefix }, attemptId)
    await fleet.untilAttempt(attemptId, 'running')
    worker.kill('SIGTERM')
    const killedAt = performance.now()
    // Past the shutdown deadline and past a whole lease TTL (1.5 s): alive, and the lease was
    // renewed meanwhile (an unrenewed one would have expired by now).
    await new Promise((r) => setTimeout(r, 2_000))
    expect(worker.isClosed()).toBe(false)
    const lease = await sql<{ live: boolean; status: string }>`
      select lease_expires_at > now() as live, status from attempts where id = ${attemptId}
    `.execute(db)
    expect(lease.rows[0]).toEqual({ live: true, status: 'running' })
    expect(await worker.exited).toBe(0)
    expect(performance.now() - killedAt).toBeGreaterThanOrEqual(STUBBORN_MS - 100)
    expect(await getAttempt(db, attemptId)).toMatchObject({
      status: 'terminal',
      stopReason: 'aborted',
      failureCategory: 'shutdown',
    })
    expect(worker.output()).toContain('checked shutdown not finished; trying again')
  })

  test.for([
    { how: 'a second signal', env: {}, second: true },
    { how: 'the hard deadline', env: { SHUTDOWN_HARD_DEADLINE_MS: '800' }, second: false },
  ])(
    '$how gives the drain up: the worker exits 1 while the child still runs',
    async ({ env, second }, { baton, db, redisUrl, queuePrefix }) => {
      const fleet = await baton({
        api: false,
        workerEnv: { SHUTDOWN_DEADLINE_MS: '300', ...env },
      })
      const { worker } = fleet
      const attemptId = await accept(db, '{"hang":true,"ignoreCancelMs":60000}')
      await enqueue({ redisUrl, queuePrefix }, attemptId)
      await fleet.untilAttempt(attemptId, 'running')
      worker.kill('SIGTERM')
      if (second) {
        await new Promise((r) => setTimeout(r, 500))
        worker.kill('SIGTERM')
      }
      expect(await worker.exited).toBe(1)
      // Nothing was committed for it: its lease will expire and the reconciler ends it.
      expect(await getAttempt(db, attemptId)).toMatchObject({ status: 'running' })
    },
  )
})
