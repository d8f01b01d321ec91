// What every phase of a bench run shares: a private Redis (its commands and CPU are the bench's
// alone, while the shared one serves everyone else on this machine), the Postgres server of
// DATABASE_URL and the counters' connection to it.
import { Redis } from 'ioredis'
import { startRedisServer } from '@baton/testing/redis-server'
import {
  connectPostgresCounters,
  postgresIdleRate,
  redisProcessId,
  type Counters,
} from './counters.ts'

export interface BenchContext extends Counters {
  readonly redisUrl: string
  /** The Postgres server; each system's database is a fresh one on it. */
  readonly serverUrl: string
  close(): Promise<void>
}

const IDLE_WINDOW_MS = 5_000

export async function openBenchContext(serverUrl: string): Promise<BenchContext> {
  const redisServer = await startRedisServer()
  const redis = new Redis(redisServer.url)
  try {
    const postgres = await connectPostgresCounters(serverUrl)
    return {
      redisUrl: redisServer.url,
      redis,
      redisPid: redisProcessId(await redis.info('server')),
      serverUrl,
      postgres,
      postgresIdleMsPerMs: await postgresIdleRate(postgres, IDLE_WINDOW_MS),
      async close() {
        redis.disconnect()
        await postgres.admin.end()
        await redisServer.close()
      },
    }
  } catch (error) {
    redis.disconnect()
    await redisServer.close()
    throw error
  }
}
