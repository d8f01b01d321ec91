import { once } from 'node:events'
import { Queue, Worker } from 'bullmq'
import type { Redis } from 'ioredis'
import { describe, expect, test } from '@baton/testing'
import { AttemptWorker } from '../src/attempt-worker.ts'
import { createRedisConnection } from '../src/connection.ts'

/**
 * Counts, through Redis's `MONITOR`, the two ways the workers of queue `name` ask Redis for a job:
 * the fetch loop's `moveToActive` (the BullMQ script with 11 keys) and the `moveToFinished` (14
 * keys) of a finished job that asks for the next one (its sixth argument, `fetchNext`, is "1").
 */
async function watchFetches(monitoring: Redis, prefix: string, name: string) {
  const waitKey = `${prefix}:${name}:wait`
  const sentinel = `${prefix}:${name}:sentinel`
  const counts = { loopFetches: 0, finishedJobFetches: 0 }
  let sentinelSeen: () => void = () => {}
  const monitor = await monitoring.monitor()
  monitor.on('monitor', (_time: string, args: string[]) => {
    const [command = '', , keyCount, firstKey] = args
    const name = command.toLowerCase()
    if (name === 'get' && args[1] === sentinel) sentinelSeen()
    // A script's first run on a connection is an `eval` (ioredis loads it that way).
    if ((name !== 'evalsha' && name !== 'eval') || firstKey !== waitKey) return
    if (keyCount === '11') counts.loopFetches += 1
    if (keyCount === '14' && args[3 + 14 + 5] === '1') counts.finishedJobFetches += 1
  })
  return {
    /** The counts once every command sent before this call has reached the monitor. */
    async settle(): Promise<typeof counts> {
      const seen = new Promise<void>((resolve) => (sentinelSeen = resolve))
      const probe = monitoring.duplicate()
      await probe.get(sentinel)
      await seen
      probe.disconnect()
      monitor.disconnect()
      await monitoring.quit()
      return { ...counts }
    },
  }
}

/** Runs `jobs` jobs one after another, each added once the one before has finished. */
async function runOneAtATime(worker: Worker, queue: Queue, jobs: number, fail: boolean) {
  for (let i = 0; i < jobs; i += 1) {
    const finished = new Promise<void>((resolve) => {
      const done = (): void => {
        worker.off('completed', done)
        worker.off('failed', done)
        resolve()
      }
      worker.on('completed', done)
      worker.on('failed', done)
    })
    await queue.add('job', { i, fail }, { removeOnComplete: true, removeOnFail: true })
    await finished
  }
}

/** A no-op job, or one that fails when its data says so. */
async function runJob(job: { data: unknown }): Promise<string> {
  if ((job.data as { fail?: boolean }).fail === true) throw new Error('this job fails')
  return 'done'
}

type WorkerClass = typeof Worker<unknown, unknown>

/**
 * Counts the loop's fetches as BullMQ's worker sends them to Redis (`moveToActive`, which an
 * AttemptWorker calls unless it answers a fetch itself): all of them, and those sent since the
 * last one that took a job. `restore` puts BullMQ's own method back.
 */
function countRedisFetches() {
  const fetch = Worker.prototype as unknown as {
    moveToActive: (...args: unknown[]) => Promise<unknown>
  }
  const moveToActive = fetch.moveToActive
  const counts = { sent: 0, sinceTake: 0, restore: () => {} }
  counts.restore = () => {
    fetch.moveToActive = moveToActive
  }
  fetch.moveToActive = async function (this: unknown, ...args: unknown[]) {
    counts.sent += 1
    counts.sinceTake += 1
    const job = await moveToActive.apply(this, args)
    if (job !== undefined) counts.sinceTake = 0
    return job
  }
  return counts
}

/** A queue and a stopped worker of `Class` on one auto-pipelined connection, as Baton runs them. */
async function openQueue(
  redisUrl: string,
  prefix: string,
  name: string,
  Class: WorkerClass,
  concurrency: number,
  processor: (job: { data: unknown }) => Promise<string> = runJob,
) {
  const connection = createRedisConnection(redisUrl, 'test', { autoPipelining: true })
  const queue = new Queue(name, { connection, prefix })
  const worker = new Class(name, processor, {
    connection,
    prefix,
    concurrency,
    autorun: false,
  })
  await worker.waitUntilReady()
  return {
    queue,
    worker,
    close: async () => {
      await worker.close()
      await queue.close()
      connection.disconnect()
    },
  }
}

describe('attempt worker', () => {
  test('a job that completes or fails while the worker waits for arrivals does not ask for the next one; plain BullMQ does', async ({
    redisUrl,
    queuePrefix,
    redis,
  }) => {
    const jobs = 8
    const fetches: Record<string, { loopFetches: number; finishedJobFetches: number }> = {}
    const kinds: [string, WorkerClass, boolean][] = [
      ['attempt', AttemptWorker, false],
      ['attempt-failing', AttemptWorker, true],
      ['plain', Worker, false],
    ]
    for (const [kind, WorkerClass, fail] of kinds) {
      const name = `one-at-a-time-${kind}`
      const { queue, worker, close } = await openQueue(redisUrl, queuePrefix, name, WorkerClass, 10)
      try {
        const watch = await watchFetches(redis(), queuePrefix, name)
        void worker.run()
        await runOneAtATime(worker, queue, jobs, fail)
        fetches[kind] = await watch.settle()
      } finally {
        await close()
      }
    }
    // The loop takes every job in all three; plain BullMQ's finished jobs also ask, in vain.
    expect(fetches.attempt?.finishedJobFetches).toBe(0)
    expect(fetches['attempt-failing']?.finishedJobFetches).toBe(0)
    expect(fetches.plain?.finishedJobFetches).toBe(jobs)
    expect(fetches.attempt?.loopFetches).toBeGreaterThanOrEqual(jobs)
  })

  test('with every slot busy, a finished job still takes the next waiting one', async ({
    redisUrl,
    queuePrefix,
    redis,
  }) => {
    const jobs = 20
    const name = 'backlog'
    const { queue, worker, close } = await openQueue(redisUrl, queuePrefix, name, AttemptWorker, 1)
    try {
      await queue.addBulk(
        Array.from({ length: jobs }, (_, i) => ({
          name: 'job',
          data: { i },
          opts: { removeOnComplete: true },
        })),
      )
      const watch = await watchFetches(redis(), queuePrefix, name)
      let completed = 0
      const allCompleted = new Promise<void>((resolve) =>
        worker.on('completed', () => {
          completed += 1
          if (completed === jobs) resolve()
        }),
      )
      void worker.run()
      await allCompleted
      const counts = await watch.settle()
      // The loop takes the first job and each finished job asks for the next, the last one in
      // vain; then the loop finds the queue empty and waits.
      expect(counts.finishedJobFetches).toBe(jobs)
      expect(counts.loopFetches).toBeLessThanOrEqual(2)
    } finally {
      await close()
    }
  })

  test('a job that ends the wait for arrivals starts before the worker asks Redis again', async ({
    redisUrl,
    queuePrefix,
  }) => {
    // Whether no fetch was sent to Redis since the one that took a job, seen by each job as it
    // starts. The loop sends one fetch at a time.
    const fetches = countRedisFetches()
    const jobs = 10
    const atStart: boolean[] = []
    const { worker, close } = await openQueue(
      redisUrl,
      queuePrefix,
      'woken',
      AttemptWorker,
      10,
      async () => {
        atStart.push(fetches.sinceTake === 0)
        return 'done'
      },
    )
    // Jobs come from another process's connection, as the API adds them.
    const api = createRedisConnection(redisUrl, 'api', { autoPipelining: true })
    const producer = new Queue('woken', { connection: api, prefix: queuePrefix })
    try {
      // Every job arrives while the loop waits: the first one too, once its first fetch found the
      // queue empty (a job added before that fetch is taken by it, and never waited for).
      const waiting = once(worker, 'drained')
      void worker.run()
      await waiting
      await runOneAtATime(worker, producer, jobs, false)
    } finally {
      fetches.restore()
      await producer.close()
      api.disconnect()
      await close()
    }
    // BullMQ's own loop may fetch once more before it starts a job its wait ended with (whether
    // it does depends on how the wait ended); this one never does.
    expect(atStart).toEqual(Array(jobs).fill(true))
  })

  test('the fetch after one that ended the wait with a job answers none without asking Redis', async ({
    redisUrl,
    queuePrefix,
  }) => {
    const fetches = countRedisFetches()
    const { queue, worker, close } = await openQueue(
      redisUrl,
      queuePrefix,
      'woken-fetch',
      AttemptWorker,
      10,
    )
    const loopFetch = (token: string) =>
      (worker as unknown as { moveToActive(token: string): Promise<unknown> }).moveToActive(token)
    try {
      expect(await loopFetch('t0')).toBeUndefined() // the queue is empty: the loop would wait
      await queue.add('job', { i: 1 })
      expect(await loopFetch('t1')).toMatchObject({ data: { i: 1 } }) // the wait ended with a job
      expect(fetches.sent).toBe(2)
      expect(await loopFetch('t2')).toBeUndefined() // that job starts first
      expect(fetches.sent).toBe(2)
      await queue.add('job', { i: 2 })
      expect(await loopFetch('t3')).toMatchObject({ data: { i: 2 } }) // then the loop asks again
      expect(fetches.sent).toBe(3)
    } finally {
      fetches.restore()
      await close()
    }
  })
})
