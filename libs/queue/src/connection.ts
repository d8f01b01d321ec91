import { Redis, type RedisOptions } from 'ioredis'

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
 * `maxRetriesPerRequest` is null; the client reconnects on its own after a Redis restart.
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
  const connection = new Redis(url, {
    maxRetriesPerRequest: null,
    connectionName,
    commandTimeout: timeouts.commandTimeoutMs,
    connectTimeout: timeouts.connectTimeoutMs,
    // Connects at the first command instead of at once (for a connection that may go unused).
    lazyConnect: options.lazyConnect ?? false,
    // Commands issued in the same tick leave in one write. A duplicate BullMQ makes for its
    // blocking wait for jobs inherits this, harmlessly: nothing else runs on that connection.
    enableAutoPipelining: options.autoPipelining ?? false,
  })
  // `duplicate(override)` merges the override into this connection's options; an absent timeout
  // is none.
  const duplicate = connection.duplicate.bind(connection)
  const noCommandTimeout = { commandTimeout: undefined } as unknown as Partial<RedisOptions>
  connection.duplicate = (override) => duplicate({ ...override, ...noCommandTimeout })
  return connection
}
