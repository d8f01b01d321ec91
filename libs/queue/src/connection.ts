import type { Redis, RedisOptions } from 'ioredis'
import bullmqPackage from 'bullmq/package.json' with { type: 'json' }
import { LeanPipelineRedis } from './lean-pipeline.ts'

/**
 * Commands an auto-pipelined connection sends on their own. ioredis builds a pipeline for every
 * tick that issues a command and copies each script defined on the connection onto it (BullMQ
 * defines 64), which costs tens of microseconds per pipeline. That buys one write for commands
 * that share a tick, and next to nothing for these, which seldom do:
 * - BullMQ's worker fetches jobs one `moveToActive` at a time, each after the last one answered
 *   (BullMQ names its scripts `<name>:<its version>`);
 * - its wait for new jobs, `bzpopmin`, runs alone on a connection of its own;
 * - the API adds a lone attempt's job with `addStandardJob` (`enqueueAttempts`; several at once
 *   leave in one `addBulk`, a pipeline of their own).
 * A fetch sent at once can overtake a `moveToFinished` issued earlier in the same tick that asks
 * for the next job (see AttemptWorker for when one does) and take the job it would have taken;
 * which call takes a job is all that order decides.
 *
 * A stream publisher's connection is not auto-pipelined at all: it already puts a tick's events
 * in the entries of one flush, and writes them at once (see `createStreamPublisher`).
 */
export const UNPIPELINED_COMMANDS: readonly string[] = [
  `moveToActive:${bullmqPackage.version}`,
  `addStandardJob:${bullmqPackage.version}`,
  'bzpopmin',
]

/** How long a Redis call may take: every connection Baton opens is bounded by these. */
export interface RedisTimeouts {
  /** A command unanswered this long fails (`Command timed out`, a transient error). */
  readonly commandTimeoutMs: number
  /** A connection not made this long is given up and tried again. */
  readonly connectTimeoutMs: number
}

/** The bounds of a connection whose owner names none (scripts, tests). */
export const DEFAULT_REDIS_TIMEOUTS: RedisTimeouts = {
  commandTimeoutMs: 5_000,
  connectTimeoutMs: 5_000,
}

/**
 * A Redis connection as BullMQ needs it: blocking commands must not be retried per request, so
 * `maxRetriesPerRequest` is null; the client reconnects on its own after a Redis restart. Its
 * pipelines, auto-pipelining's included, are lean ones (`lean-pipeline.ts`), which the young
 * generation's collector frees.
 *
 * Every command is bounded by `timeouts.commandTimeoutMs` and every connect by
 * `connectTimeoutMs`, except on the duplicates BullMQ makes of this connection: a worker waits for
 * jobs with a blocking command on one, which answers only when a job arrives or its own timeout
 * (the worker's `drainDelay`) passes, and BullMQ bounds that wait itself (a watchdog of the wait
 * plus a second that resets the connection). A command timeout there would fail every idle wait
 * longer than it.
 */
export function createRedisConnection(
  url: string,
  connectionName = 'baton',
  options: { autoPipelining?: boolean; lazyConnect?: boolean; timeouts?: RedisTimeouts } = {},
): Redis {
  const timeouts = options.timeouts ?? DEFAULT_REDIS_TIMEOUTS
  const connection = new LeanPipelineRedis(url, {
    maxRetriesPerRequest: null,
    connectionName,
    commandTimeout: timeouts.commandTimeoutMs,
    connectTimeout: timeouts.connectTimeoutMs,
    // Connects at the first command instead of at once (for a connection that may go unused).
    lazyConnect: options.lazyConnect ?? false,
    // Commands issued in the same tick leave in one write. A duplicate BullMQ makes for its
    // blocking wait for jobs inherits this, harmlessly: nothing else runs on that connection.
    enableAutoPipelining: options.autoPipelining ?? false,
    autoPipeliningIgnoredCommands: [...UNPIPELINED_COMMANDS],
  })
  const duplicate = connection.duplicate.bind(connection)
  // ioredis merges the override into this connection's options; an absent timeout is none.
  const noCommandTimeout = { commandTimeout: undefined } as unknown as Partial<RedisOptions>
  connection.duplicate = (override) => duplicate({ ...override, ...noCommandTimeout })
  return connection
}
