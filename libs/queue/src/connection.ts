import { Redis } from 'ioredis'
import bullmqPackage from 'bullmq/package.json' with { type: 'json' }

/**
 * Commands an auto-pipelined connection sends on their own. ioredis builds a pipeline for every
 * tick that issues a command and copies each script defined on the connection onto it (BullMQ
 * defines 64), which costs tens of microseconds per pipeline, and the pipeline leaves only once
 * the event loop reaches its next check phase. That buys one write for commands that share a
 * tick, and next to nothing for these, which seldom do:
 * - BullMQ's worker fetches jobs one `moveToActive` at a time, each after the last one answered
 *   (BullMQ names its scripts `<name>:<its version>`);
 * - its wait for new jobs, `bzpopmin`, runs alone on a connection of its own;
 * - the API adds a lone attempt's job with `addStandardJob` (`enqueueAttempts`; several at once
 *   leave in one `addBulk`, a pipeline of their own);
 * - a stream publisher's `xadd`: it already puts the events of a tick in one entry, and it keeps
 *   one entry in flight (see event-stream.ts). Sent at once, a settlement's bell leaves on the
 *   commit's answer instead of a tick later.
 * A command sent at once can overtake one issued earlier in the same tick that waits for its
 * pipeline. Nothing here orders them: a bell follows the ledger write it announces, not a Redis
 * command; and a fetch that overtakes a `moveToFinished` asking for the next job (see AttemptWorker
 * for when one does) takes the job it would have taken, which is all that order decides.
 */
export const UNPIPELINED_COMMANDS: readonly string[] = [
  `moveToActive:${bullmqPackage.version}`,
  `addStandardJob:${bullmqPackage.version}`,
  'bzpopmin',
  'xadd',
]

/**
 * A Redis connection as BullMQ needs it: blocking commands must not be retried per request, so
 * `maxRetriesPerRequest` is null; the client reconnects on its own after a Redis restart.
 */
export function createRedisConnection(
  url: string,
  connectionName = 'baton',
  options: { autoPipelining?: boolean } = {},
): Redis {
  return new Redis(url, {
    maxRetriesPerRequest: null,
    connectionName,
    // Commands issued in the same tick leave in one write. A duplicate BullMQ makes for its
    // blocking wait for jobs inherits this, harmlessly: nothing else runs on that connection.
    enableAutoPipelining: options.autoPipelining ?? false,
    autoPipeliningIgnoredCommands: [...UNPIPELINED_COMMANDS],
  })
}
