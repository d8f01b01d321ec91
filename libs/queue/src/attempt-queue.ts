import { Queue, type ConnectionOptions, type JobsOptions } from 'bullmq'
import { ATTEMPT_JOB_NAME, QueueName, type AttemptJob } from '@baton/contracts'
import {
  partitionPrefixes,
  sessionPartition,
  type QueueTopology,
  type SessionKey,
} from './partitions.ts'

export type AttemptQueue = Queue<AttemptJob, void, typeof ATTEMPT_JOB_NAME>

export interface QueueOptions {
  readonly connection: ConnectionOptions
  /** BullMQ key prefix; tests use a fresh one each. */
  readonly prefix: string
}

/**
 * A completed job is removed at once: the ledger is the truth (terminal outcomes, timelines and
 * the ledger dashboard read it), and keeping a window of completed jobs cost three Redis commands
 * per delegation (ZADD, ZREVRANGE, ZREMRANGEBYRANK). Failed jobs, rare and worth a look, stay for
 * bull-board. The reconciler re-enqueues an accepted attempt whose job is gone.
 */
const JOB_DEFAULTS = {
  removeOnComplete: true,
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

export interface AttemptJobSpec {
  readonly name: typeof ATTEMPT_JOB_NAME
  readonly data: AttemptJob
  readonly opts: JobsOptions & { readonly jobId: string }
}

/**
 * The one shape of an attempt's job. The job id is the attempt id, so adding it twice is a no-op
 * while the first job exists: every enqueue path (the API's batch, the reconciler) builds it here.
 * An attempt id alone makes `{ attemptId }`; a traced API passes the job data with its trace
 * context.
 */
export function attemptJob(attempt: string | AttemptJob): AttemptJobSpec {
  const data = typeof attempt === 'string' ? { attemptId: attempt } : attempt
  return { name: ATTEMPT_JOB_NAME, data, opts: { jobId: data.attemptId } }
}

/**
 * Enqueue attempts in one round trip. Attempts whose job exists are left as they are. A lone
 * attempt (every enqueue at rest) is one `add`; several are one `addBulk`.
 */
export async function enqueueAttempts(
  queue: AttemptQueue,
  attempts: readonly (string | AttemptJob)[],
): Promise<void> {
  const [only] = attempts
  if (only === undefined) return
  if (attempts.length === 1) {
    const job = attemptJob(only)
    await queue.add(job.name, job.data, job.opts)
    return
  }
  await queue.addBulk(attempts.map(attemptJob))
}

/** Enqueue one attempt (see `enqueueAttempts`). */
export async function enqueueAttempt(queue: AttemptQueue, attemptId: string): Promise<void> {
  await enqueueAttempts(queue, [attemptId])
}

/**
 * Re-enqueue attempts the ledger says are waiting, when their job no longer exists (Redis was
 * flushed or restarted) or already finished without making them run. Returns how many were added.
 * Three round trips whatever the count: the job states (pipelined), the removal of finished jobs
 * (pipelined), one `addBulk`.
 */
export async function ensureAttemptsEnqueued(
  queue: AttemptQueue,
  attemptIds: readonly string[],
): Promise<number> {
  if (attemptIds.length === 0) return 0
  const states = await Promise.all(attemptIds.map((id) => queue.getJobState(id)))
  const finished = attemptIds.filter((_, i) => states[i] === 'completed' || states[i] === 'failed')
  const missing = attemptIds.filter((_, i) => states[i] === 'unknown')
  await Promise.all(finished.map((id) => queue.remove(id)))
  const readd = [...finished, ...missing]
  await enqueueAttempts(queue, readd)
  return readd.length
}

/** An attempt with the session that decides its queue partition. */
export type AttemptRoute = SessionKey & { readonly attemptId: string }

/** An attempt's job as an enqueuer builds it: its data and the session that routes it. */
export type RoutedAttemptJob = AttemptJob & SessionKey

/**
 * The attempt queue split into `QUEUE_PARTITIONS` partitions (see `QueueTopology`), one BullMQ
 * queue each under its partition's prefix; a session's attempts all go to one partition.
 */
export interface AttemptQueues {
  /** The queue of each partition, in partition order. */
  readonly partitions: readonly AttemptQueue[]
  /** The queue of a session's attempts. */
  of(session: SessionKey): AttemptQueue
  /** Job counts summed over the partitions. */
  getJobCounts(): Promise<Record<string, number>>
  close(): Promise<void>
}

export function createAttemptQueues(options: {
  readonly connection: ConnectionOptions
  readonly topology: QueueTopology
}): AttemptQueues {
  const partitions = partitionPrefixes(options.topology).map((prefix) =>
    createAttemptQueue({ connection: options.connection, prefix }),
  )
  const count = partitions.length
  return {
    partitions,
    of: (session) => partitions[sessionPartition(session, count)] as AttemptQueue,
    async getJobCounts() {
      const total: Record<string, number> = {}
      for (const counts of await Promise.all(partitions.map((q) => q.getJobCounts()))) {
        for (const [state, n] of Object.entries(counts)) total[state] = (total[state] ?? 0) + n
      }
      return total
    },
    async close() {
      await Promise.all(partitions.map((q) => q.close()))
    },
  }
}

/** Items grouped by the queue of their session (a partition's group keeps their order). */
function byPartition<T extends SessionKey>(
  queues: AttemptQueues,
  items: readonly T[],
): Map<AttemptQueue, T[]> {
  const groups = new Map<AttemptQueue, T[]>()
  for (const item of items) {
    const queue = queues.of(item)
    const group = groups.get(queue)
    if (group === undefined) groups.set(queue, [item])
    else group.push(item)
  }
  return groups
}

/** The job data of a routed job: what routed it stays out (the partition it is in says it). */
function jobData({ namespaceId: _n, sessionId: _s, ...data }: RoutedAttemptJob): AttemptJob {
  return data
}

/**
 * Enqueue attempts, each into its session's partition: one round trip per partition they fall in
 * (see `enqueueAttempts`), the partitions at once.
 */
export async function enqueueRouted(
  queues: AttemptQueues,
  attempts: readonly RoutedAttemptJob[],
): Promise<void> {
  await Promise.all(
    [...byPartition(queues, attempts)].map(([queue, group]) =>
      enqueueAttempts(queue, group.map(jobData)),
    ),
  )
}

/** `ensureAttemptsEnqueued` in each attempt's own partition; returns how many were added. */
export async function ensureRoutedEnqueued(
  queues: AttemptQueues,
  attempts: readonly AttemptRoute[],
): Promise<number> {
  const added = await Promise.all(
    [...byPartition(queues, attempts)].map(([queue, group]) =>
      ensureAttemptsEnqueued(
        queue,
        group.map((a) => a.attemptId),
      ),
    ),
  )
  return added.reduce((sum, n) => sum + n, 0)
}
