// Starts the queue floor (see floor-queue.ts) as the bench runs Baton: one API process and
// `workers` worker processes on their own queue prefix; and reads its throughput from its queue.
import type { Redis } from 'ioredis'
import type { AppProcess } from '@baton/testing/processes'
import { startApiAndWorkers } from './service-processes.ts'
import { countedLedger, type LedgerReader } from './http-load.ts'
import { FLOOR_API_READY_MESSAGE, FLOOR_QUEUE, FLOOR_WORKER_READY_MESSAGE } from './floor-queue.ts'

export function startFloorService(
  env: Record<string, string>,
  workers: number,
): Promise<AppProcess[]> {
  return startApiAndWorkers(
    {
      name: 'floor',
      api: { entry: 'scripts/lib/bench/floor-service.ts', readyMessage: FLOOR_API_READY_MESSAGE },
      worker: {
        entry: 'scripts/lib/bench/floor-worker.ts',
        readyMessage: FLOOR_WORKER_READY_MESSAGE,
      },
    },
    env,
    workers,
  )
}

/** Milliseconds of a stream entry id (`<ms>-<seq>`): the Redis server's clock when it was added. */
const entryMs = (id: string): number => Number(id.slice(0, id.indexOf('-')))

/**
 * The floor keeps no record, so the bench reads its queue: open jobs from BullMQ's counts, and the
 * span from the queue's event stream, whose entry ids are the Redis server's timestamps — from the
 * first event (the first job added) to the last `completed`, as Baton's span runs from the first
 * attempt created to the last terminal. Each read is a few Redis commands and no transaction.
 */
export function floorLedger(redis: Redis, prefix: string): LedgerReader {
  const key = (name: string): string => `${prefix}:${FLOOR_QUEUE}:${name}`
  return countedLedger({
    async openCount() {
      // BullMQ's own keys of the states a job is open in (read directly: a `Queue` object would
      // write the queue's settings, the event stream's length among them).
      const counts = await redis
        .pipeline()
        .llen(key('wait'))
        .llen(key('active'))
        .zcard(key('prioritized'))
        .zcard(key('delayed'))
        .exec()
      return (counts ?? []).reduce((sum, [error, n]) => {
        if (error !== null) throw error
        return sum + Number(n)
      }, 0)
    },
    async span() {
      let first: number | undefined
      let last = 0
      let n = 0
      let from = '-'
      for (;;) {
        const page = await redis.xrange(key('events'), from, '+', 'COUNT', 10_000)
        for (const [id, fields] of page) {
          first ??= entryMs(id)
          if (fields[0] === 'event' && fields[1] === 'completed') {
            n += 1
            last = entryMs(id)
          }
        }
        const end = page.at(-1)
        if (end === undefined || page.length < 10_000) break
        from = `(${end[0]}`
      }
      return { seconds: first === undefined ? 0 : (last - first) / 1000, n }
    },
  })
}
