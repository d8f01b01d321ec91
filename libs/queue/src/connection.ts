import { Redis } from 'ioredis'

/**
 * A Redis connection as BullMQ needs it: blocking commands must not be retried per request, so
 * `maxRetriesPerRequest` is null; the client reconnects on its own after a Redis restart.
 */
export function createRedisConnection(url: string, connectionName = 'baton'): Redis {
  return new Redis(url, { maxRetriesPerRequest: null, connectionName, lazyConnect: false })
}
