import { Redis } from 'ioredis'
import pg from 'pg'
import { expect, hasRedisServerBinary, startRedisServer, test } from '@baton/testing'
import { databaseName } from '../services.ts'
import {
  connectPostgresCounters,
  measureCost,
  redisProcessId,
  settledTransactions,
} from './counters.ts'

test.skipIf(!hasRedisServerBinary())(
  "a phase's cost: its Redis commands, its database's CPU, and every transaction once its connections closed",
  async ({ databaseUrl, track }) => {
    const server = track(await startRedisServer())
    const redis = new Redis(server.url)
    const postgres = await connectPostgresCounters(databaseUrl)
    const counters = { redis, redisPid: redisProcessId(await redis.info('server')), postgres }
    const database = databaseName(databaseUrl)
    /** One connection running `statements` transactions; the counts are read once it closed. */
    const session = async (statements: number) => {
      const client = new pg.Client({ connectionString: databaseUrl })
      await client.connect()
      const { cost } = await measureCost(
        { ...counters, postgresIdleMsPerMs: 0 },
        [process.pid],
        database,
        async () => {
          for (let i = 0; i < 7; i += 1) await redis.ping()
          for (let i = 0; i < statements; i += 1)
            await client.query('select count(*) from generate_series(1, 100000)')
        },
      )
      // Its counts are not all reported yet: no reading while it is connected.
      await expect(settledTransactions(postgres, database, 200)).rejects.toThrow(/still connected/)
      await client.end()
      return { cost, transactions: await settledTransactions(postgres, database) }
    }
    try {
      const start = await settledTransactions(postgres, database)
      // A connection's own start-up counts too: the difference of two sessions is what they ran.
      const idle = await session(0)
      const busy = await session(25)
      expect(busy.transactions - idle.transactions - (idle.transactions - start)).toBe(25)
      expect(busy.cost.redisCommands).toBe(7)
      expect(busy.cost.postgresCpuMs).toBeGreaterThan(0)
    } finally {
      await postgres.admin.end()
      redis.disconnect()
      await server.close()
    }
  },
)
