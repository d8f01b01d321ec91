import { randomUUID } from 'node:crypto'
import pg from 'pg'
import { expect, test } from '@baton/testing'
import { dropDatabase, withDatabase } from '../services.ts'
import { naiveLedgerTimes, prepareNaiveDatabase } from './naive.ts'
import { wallClockMs } from './wait-steps.ts'

test("reads when each finished row's insert and update began, on the wall clock", async ({
  databaseUrl,
}) => {
  // The hand-rolled service's own database, beside the test's.
  const url = withDatabase(databaseUrl, `naive_times_${randomUUID().slice(0, 8)}`)
  await prepareNaiveDatabase(url)
  const pool = new pg.Pool({ connectionString: url, max: 1 })
  try {
    const before = wallClockMs()
    const [finished, open] = [randomUUID(), randomUUID()]
    for (const id of [finished, open]) {
      await pool.query(
        `insert into delegations (id, session_id, name, prompt) values ($1, 's', 'n', '{}')`,
        [id],
      )
    }
    await pool.query(
      `update delegations set status = 'completed', output = 'ok', finished_at = now() where id = $1`,
      [finished],
    )
    const after = wallClockMs()

    const times = await naiveLedgerTimes(pool, [finished, open, randomUUID()])
    expect([...times.keys()]).toEqual([finished])
    const t = times.get(finished)
    expect(t?.claimedAtMs).toBeUndefined()
    expect(t?.acceptedAtMs).toBeGreaterThanOrEqual(before - 50)
    expect(t?.acceptedAtMs).toBeLessThan(t?.committedAtMs ?? Number.NaN)
    expect(t?.committedAtMs).toBeLessThanOrEqual(after + 50)
    expect(await naiveLedgerTimes(pool, [])).toEqual(new Map())
  } finally {
    await pool.end()
    await dropDatabase(url)
  }
})
