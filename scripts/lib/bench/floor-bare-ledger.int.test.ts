import { randomUUID } from 'node:crypto'
import pg from 'pg'
import { createBatonClient } from '@baton/client'
import { expect, freePort, test } from '@baton/testing'
import { dropDatabase, withDatabase } from '../services.ts'
import { startFloorService } from './floor.ts'
import {
  auditBareLedger,
  bareLedgerReader,
  bareLedgerTimes,
  prepareBareLedgerDatabase,
} from './floor-bare.ts'
import { bareAccepts, bareExecutions } from './floor-bare-ledger.ts'
import { expectOrderedAndDrained, submitThenWait } from './floor-test-support.ts'
import { NOOP_PROMPT } from './http-load.ts'

test('the queue floor with the bare ledger writes, claims under a fence and commits every delegation, in that order', async ({
  redisUrl,
  queuePrefix,
  databaseUrl,
}) => {
  // The bare ledger's own database, beside the test's.
  const url = withDatabase(databaseUrl, `floor_bare_${randomUUID().slice(0, 8)}`)
  await prepareBareLedgerDatabase(url)
  const pool = new pg.Pool({ connectionString: url, max: 2 })
  const port = await freePort()
  const services = await startFloorService(
    {
      DATABASE_URL: url,
      FLOOR_LEDGER: 'bare',
      REDIS_URL: redisUrl,
      QUEUE_PREFIX: queuePrefix,
      PORT: String(port),
      WORKER_CONCURRENCY: '10',
    },
    2,
  )
  const client = createBatonClient({ baseUrl: `http://127.0.0.1:${port}` })
  try {
    const input = { sessionId: 'floor-bare', name: 'scripted', prompt: NOOP_PROMPT }
    const { ids, waited } = await submitThenWait(client, input)
    await expectOrderedAndDrained(
      await bareLedgerTimes(
        pool,
        waited.map((w) => w.attemptId),
      ),
      bareLedgerReader(pool),
    )
    const rows = await pool.query<{ status: string; owner_generation: number; n: number }>(
      `select status, owner_generation, count(*)::int as n from attempts
       where id = any($1::uuid[]) and owner_id is not null and stop_reason = 'completed'
       group by status, owner_generation`,
      [ids],
    )
    expect(rows.rows).toEqual([{ status: 'terminal', owner_generation: 1, n: 50 }])
    expect(await auditBareLedger(pool, ids)).toEqual({ lost: 0, duplicates: 0 })

    // The audit counts what it should: an id never written is lost, a second claim a duplicate.
    await pool.query(`update attempts set owner_generation = 2 where id = $1`, [ids[0]])
    expect(await auditBareLedger(pool, [...ids, randomUUID()])).toEqual({
      lost: 1,
      duplicates: 1,
    })

    // The claim and the commit are fenced: a second claim and a commit under a stale or foreign
    // fence are refused, and the attempt keeps its one claim.
    const attemptId = await bareAccepts(pool)(input)
    const bell = { redisUrl, prefix: queuePrefix }
    const mine = bareExecutions(pool, randomUUID(), bell)
    const theirs = bareExecutions(pool, randomUUID(), bell)
    const generation = await mine.claim(attemptId)
    await expect(theirs.claim(attemptId)).rejects.toThrow(/claim was refused/)
    const result = { stopReason: 'completed' as const, output: 'late', failureCategory: null }
    await expect(mine.commit(attemptId, generation + 1, result)).rejects.toThrow(/commit/)
    await expect(theirs.commit(attemptId, generation, result)).rejects.toThrow(/commit/)
    await mine.commit(attemptId, generation, result)
    await Promise.all([mine.close(), theirs.close()])
    expect(await auditBareLedger(pool, [attemptId])).toEqual({ lost: 0, duplicates: 0 })
  } finally {
    for (const s of services) await s.close()
    await pool.end()
    await dropDatabase(url)
  }
})
