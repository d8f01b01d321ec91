import { Redis } from 'ioredis'

/**
 * A Redis connection as BullMQ needs it: blocking commands must not be retried per request, so
 * `maxRetriesPerRequest` is null; the client reconnects on its own after a Redis restart.
 */
export function createRedisConnection(
  url: string,
  connectionName = 'baton',
  options: { autoPipelining?: boolean; lazyConnect?: boolean } = {},
): Redis {
  return new Redis(url, {
    maxRetriesPerRequest: null,
    connectionName,
    // Connects at the first command instead of at once (for a connection that may go unused).
    lazyConnect: options.lazyConnect ?? false,
    // Commands issued in the same tick leave in one write. A duplicate BullMQ makes for its
    // blocking wait for jobs inherits this, harmlessly: nothing else runs on that connection.
    enableAutoPipelining: options.autoPipelining ?? false,
  })
}
