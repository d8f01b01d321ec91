import { Queue, type ConnectionOptions } from 'bullmq'
import { ATTEMPT_JOB_NAME, QueueName, type AttemptJob } from '@baton/contracts'

export type AttemptQueue = Queue<AttemptJob, void, typeof ATTEMPT_JOB_NAME>

export interface QueueOptions {
  readonly connection: ConnectionOptions
  /** BullMQ key prefix; tests use a fresh one each. */
  readonly prefix: string
}

/**
 * Finished jobs are kept briefly for the dashboard only: the ledger is the truth, and the
 * reconciler re-enqueues an accepted attempt whose job is gone.
 */
const JOB_DEFAULTS = {
  removeOnComplete: { count: 1000 },
  removeOnFail: { count: 5000 },
  attempts: 5,
  backoff: { type: 'exponential', delay: 200 },
} as const

export function createAttemptQueue(options: QueueOptions): AttemptQueue {
  return new Queue<AttemptJob, void, typeof ATTEMPT_JOB_NAME>(QueueName.Attempts, {
    connection: options.connection,
    prefix: options.prefix,
    defaultJobOptions: JOB_DEFAULTS,
  })
}

/** Enqueue an attempt. The job id is the attempt id, so enqueueing twice is a no-op. */
export async function enqueueAttempt(queue: AttemptQueue, attemptId: string): Promise<void> {
  await queue.add(ATTEMPT_JOB_NAME, { attemptId }, { jobId: attemptId })
}

/**
 * Re-enqueue attempts the ledger says are waiting, when their job no longer exists (Redis was
 * flushed or restarted) or already finished without making them run. Returns how many were added.
 */
export async function ensureAttemptsEnqueued(
  queue: AttemptQueue,
  attemptIds: readonly string[],
): Promise<number> {
  let added = 0
  for (const attemptId of attemptIds) {
    const state = await queue.getJobState(attemptId)
    if (state === 'completed' || state === 'failed') {
      await queue.remove(attemptId)
    } else if (state !== 'unknown') {
      continue
    }
    await enqueueAttempt(queue, attemptId)
    added += 1
  }
  return added
}
