import { once } from 'node:events'
import pg from 'pg'
import { expect, test } from '@baton/testing'
import { connectPostgresCounters, measurePhase, redisProcessId } from './counters.ts'

test('a phase measured without transaction counts reports none, though it made some', async ({
  databaseUrl,
  redis,
}) => {
  const connection = redis()
  const counters = await connectPostgresCounters(databaseUrl)
  const client = new pg.Client({ connectionString: databaseUrl })
  await client.connect()
  try {
    const database = (await client.query<{ db: string }>('select current_database() as db')).rows[0]
      ?.db
    if (database === undefined) throw new Error('no current database')
    const { result, cost } = await measurePhase(
      {
        nodePids: [process.pid],
        redis: connection,
        redisPid: redisProcessId(await connection.info('server')),
        postgres: { counters, database },
      },
      0,
      async () => {
        for (let i = 0; i < 3; i += 1) await client.query('select txid_current()')
        return 'done'
      },
      () => 0,
      { transactions: false },
    )
    expect(result).toBe('done')
    expect(cost.pgTransactions).toBe(0)
  } finally {
    await client.end()
    await counters.admin.end()
    const ended = once(connection, 'end')
    await connection.quit()
    await ended
  }
})
