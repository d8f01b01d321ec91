import { randomUUID } from 'node:crypto'
import { UnrecoverableError, Worker } from 'bullmq'
import { QueueName } from '@baton/contracts'
import { describe, expect, test } from '@baton/testing'
import { createAttemptQueue, enqueueAttempt, ensureAttemptsEnqueued } from '../src/attempt-queue.ts'

describe('attempt queue', () => {
  test('ensureAttemptsEnqueued re-adds finished and missing jobs and leaves waiting and active ones', async ({
    redisUrl,
    queuePrefix,
  }) => {
    const queue = createAttemptQueue({ connection: { url: redisUrl }, prefix: queuePrefix })
    const [waiting, active, completed, failed, missing] = Array.from({ length: 5 }, () =>
      randomUUID(),
    ) as [string, string, string, string, string]

    // Finish two jobs: one completes, one fails for good.
    for (const id of [completed, failed]) await enqueueAttempt(queue, id)
    const finisher = new Worker(
      QueueName.Attempts,
      async (job) => {
        if (job.id === failed) throw new UnrecoverableError('fails for good')
      },
      { connection: { url: redisUrl }, prefix: queuePrefix },
    )
    await new Promise<void>((resolve) => {
      let finished = 0
      const done = (): void => {
        finished += 1
        if (finished === 2) resolve()
      }
      finisher.on('completed', done)
      finisher.on('failed', done)
    })
    await finisher.close()
    // A completed job is removed at once (the ledger keeps the outcome); a failed one is kept.
    expect(await queue.getJobState(completed)).toBe('unknown')
    expect(await queue.getJobState(failed)).toBe('failed')

    // One job held by a (manual) worker, one left waiting.
    await enqueueAttempt(queue, active)
    const holder = new Worker(QueueName.Attempts, null, {
      connection: { url: redisUrl },
      prefix: queuePrefix,
    })
    const held = await holder.getNextJob('holder-token')
    expect(held?.id).toBe(active)
    await enqueueAttempt(queue, waiting)
    const waitingJob = await queue.getJob(waiting)

    try {
      const added = await ensureAttemptsEnqueued(queue, [
        waiting,
        active,
        completed,
        failed,
        missing,
      ])
      expect(added).toBe(3)
      expect(await queue.getJobState(active)).toBe('active')
      for (const id of [waiting, completed, failed, missing]) {
        expect(await queue.getJobState(id)).toBe('waiting')
        expect((await queue.getJob(id))?.data).toEqual({ attemptId: id })
      }
      // The waiting job is the same job, not a re-added one.
      expect((await queue.getJob(waiting))?.timestamp).toBe(waitingJob?.timestamp)
      expect(await ensureAttemptsEnqueued(queue, [])).toBe(0)
    } finally {
      await holder.close(true)
      await queue.close()
    }
  })
})
