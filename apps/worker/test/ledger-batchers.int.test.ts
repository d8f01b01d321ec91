import { createScriptedPromptProvider } from '@baton/agents'
import { ATTEMPT_JOB_NAME } from '@baton/contracts'
import { createAttemptQueue } from '@baton/queue'
import { isDataError } from '@baton/store'
import { describe, eventually, expect, test } from '@baton/testing'
import { createClaimBatcher } from '../src/ledger-batchers.ts'
import { accept, enqueue, startRuntime, untilTerminal } from './support/worker-harness.ts'

describe('poison isolation of the worker’s batched claims', () => {
  test('one poisoned item inside a claim group: every other claim succeeds, the poisoned one fails alone', async ({
    db,
  }) => {
    const attemptIds = await Promise.all(Array.from({ length: 30 }, () => accept(db, 'x')))
    const claims = createClaimBatcher(db, { ownerId: 'w-poison', leaseTtlMs: 10_000 })
    // Submitted in one tick, so they leave as one group: the poison sits in its middle.
    const poison = 'not-a-uuid'
    const submitted = [...attemptIds.slice(0, 15), poison, ...attemptIds.slice(15)].map((id) =>
      claims.submit(id),
    )
    const settled = await Promise.allSettled(submitted)
    const poisoned = settled[15]
    expect(poisoned?.status).toBe('rejected')
    expect(isDataError(poisoned?.status === 'rejected' ? poisoned.reason : undefined)).toBe(true)
    const others = settled.filter((_, i) => i !== 15)
    expect(others.map((s) => (s.status === 'fulfilled' ? s.value.kind : s.status))).toEqual(
      attemptIds.map(() => 'claimed'),
    )
  })

  test('a job whose attempt id is not a uuid fails once, without retries; the jobs around it run', async ({
    services: ctx,
    db,
    redisUrl,
    queuePrefix,
  }) => {
    const runtime = await startRuntime(ctx, createScriptedPromptProvider())
    const queue = createAttemptQueue({ connection: { url: redisUrl }, prefix: queuePrefix })
    try {
      // The queue's own job options (5 attempts with backoff) apply: only the processor stops it.
      await queue.add(ATTEMPT_JOB_NAME, { attemptId: 'not-a-uuid' }, { jobId: 'malformed' })
      const attemptIds = await Promise.all(Array.from({ length: 5 }, () => accept(db, 'ok')))
      await enqueue(ctx, ...attemptIds)
      for (const attemptId of attemptIds)
        expect(await untilTerminal(db, attemptId)).toMatchObject({ stopReason: 'completed' })
      const failed = await eventually(async () => {
        const job = await queue.getJob('malformed')
        return (await job?.getState()) === 'failed' ? job : undefined
      })
      expect(failed.attemptsMade).toBe(1)
      expect(failed.failedReason).toMatch(/malformed attempt job/)
    } finally {
      await queue.close()
    }
    await runtime.shutdownChecked(5_000)
  })
})
