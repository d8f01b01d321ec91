import type { Redis } from 'ioredis'
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

/**
 * A Redis connection as BullMQ needs it: blocking commands must not be retried per request, so
 * `maxRetriesPerRequest` is null; the client reconnects on its own after a Redis restart. Its
 * pipelines, auto-pipelining's included, are lean ones (`lean-pipeline.ts`), which the young
 * generation's collector frees.
 */
export function createRedisConnection(
  url: string,
  connectionName = 'baton',
  options: { autoPipelining?: boolean; lazyConnect?: boolean } = {},
): Redis {
  return new LeanPipelineRedis(url, {
    maxRetriesPerRequest: null,
    connectionName,
    // Connects at the first command instead of at once (for a connection that may go unused).
    lazyConnect: options.lazyConnect ?? false,
    // Commands issued in the same tick leave in one write. A duplicate BullMQ makes for its
    // blocking wait for jobs inherits this, harmlessly: nothing else runs on that connection.
    enableAutoPipelining: options.autoPipelining ?? false,
    autoPipeliningIgnoredCommands: [...UNPIPELINED_COMMANDS],
  })
}
