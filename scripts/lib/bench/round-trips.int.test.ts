import pg from 'pg'
import { expect, test } from '@baton/testing'
import { databaseRoundTrips } from './round-trips.ts'

test('times a durable write and a read by key, and leaves no table behind', async ({
  databaseUrl,
}) => {
  const steps = await databaseRoundTrips(databaseUrl, 20)
  expect(steps.writeP50Ms).toBeGreaterThan(0)
  expect(steps.readP50Ms).toBeGreaterThan(0)
  expect(steps.writeP50Ms).toBeLessThan(1_000)
  const client = new pg.Client({ connectionString: databaseUrl })
  await client.connect()
  try {
    const left = await client.query(`select to_regclass('bench_round_trips') as t`)
    expect(left.rows[0]?.t).toBeNull()
  } finally {
    await client.end()
  }
})
