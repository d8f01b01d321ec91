import { randomUUID } from 'node:crypto'
import { Redis } from 'ioredis'
import pg from 'pg'
import { sql } from 'kysely'
import {
  describe,
  eventually,
  expect,
  startFaultProxy,
  test,
  type FaultProxy,
} from '../src/index.ts'

/** A pg client through the proxy, closed with the test. */
async function pgThrough(proxy: FaultProxy): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: proxy.url })
  client.on('error', () => undefined)
  await client.connect()
  return client
}

/** Whether `promise` is still pending once the event loop has turned `turns` times. */
async function stillPending(promise: Promise<unknown>, turns = 20): Promise<boolean> {
  let settled = false
  void promise.then(
    () => (settled = true),
    () => (settled = true),
  )
  for (let i = 0; i < turns; i += 1) await new Promise((r) => setTimeout(r, 10))
  return !settled
}

describe('fault proxy', () => {
  test('forwards Postgres and Redis traffic, and delays it on command', async ({
    databaseUrl,
    redisUrl,
    track,
  }) => {
    const pgProxy = track(await startFaultProxy(databaseUrl))
    const redisProxy = track(await startFaultProxy(redisUrl))
    const client = await pgThrough(pgProxy)
    const redis = new Redis(redisProxy.url, { maxRetriesPerRequest: null })
    expect((await client.query<{ n: number }>('select 1 as n')).rows[0]?.n).toBe(1)
    expect(await redis.ping()).toBe('PONG')
    pgProxy.delay(200)
    const started = performance.now()
    await client.query('select 1')
    // Two chunks (the query, its answer), each held 200 ms.
    expect(performance.now() - started).toBeGreaterThanOrEqual(390)
    pgProxy.resume()
    await client.end()
    redis.disconnect()
    await pgProxy.close()
    await redisProxy.close()
  })

  test('a stall hangs every connection until resume; existingOnly lets new ones through', async ({
    databaseUrl,
    track,
  }) => {
    const proxy = track(await startFaultProxy(databaseUrl))
    const old = await pgThrough(proxy)
    proxy.stall({ existingOnly: true })
    const hung = old.query('select 1 as n')
    const fresh = await pgThrough(proxy)
    expect((await fresh.query<{ n: number }>('select 2 as n')).rows[0]?.n).toBe(2)
    expect(await stillPending(hung)).toBe(true)
    proxy.stall()
    const alsoHung = fresh.query('select 3')
    expect(await stillPending(alsoHung)).toBe(true)
    proxy.resume()
    expect((await hung).rows[0]).toEqual({ n: 1 })
    await alsoHung
    await old.end()
    await fresh.end()
    await proxy.close()
  })

  test('drop refuses new connections; reset and cut end the open ones', async ({
    databaseUrl,
    redisUrl,
    track,
  }) => {
    const proxy = track(await startFaultProxy(databaseUrl))
    const open = await pgThrough(proxy)
    proxy.drop()
    await expect(pgThrough(proxy)).rejects.toThrow()
    expect((await open.query<{ n: number }>('select 1 as n')).rows[0]?.n).toBe(1)
    proxy.reset()
    await expect(open.query('select 1')).rejects.toThrow()
    proxy.resume()
    const after = await pgThrough(proxy)
    expect((await after.query<{ n: number }>('select 4 as n')).rows[0]?.n).toBe(4)
    await after.end()

    const redisProxy = track(await startFaultProxy(redisUrl))
    const redis = new Redis(redisProxy.url, { maxRetriesPerRequest: 0 })
    redis.on('error', () => undefined)
    expect(await redis.ping()).toBe('PONG')
    const closed = new Promise((resolve) => redis.once('close', resolve))
    redisProxy.cut()
    await closed
    redis.disconnect()
    await proxy.close()
    await redisProxy.close()
  })

  test('a held answer: the server did the work, the client learns nothing of it', async ({
    databaseUrl,
    db,
    track,
  }) => {
    const proxy = track(await startFaultProxy(databaseUrl))
    const client = await pgThrough(proxy)
    const table = `held_${randomUUID().replaceAll('-', '')}`
    await client.query(`create table ${table} (tag text)`)
    const tag = randomUUID()
    const held = proxy.holdAnswerAfter(tag)
    const insert = client.query(`insert into ${table} values ($1)`, [tag])
    insert.catch(() => undefined)
    const answer = await held
    // Committed (autocommit) though its answer never arrived: seen from a direct connection.
    await eventually(async () => {
      const r = await sql<{ n: number }>`
        select count(*)::int as n from ${sql.table(table)} where tag = ${tag}
      `.execute(db)
      return r.rows[0]?.n === 1 ? true : undefined
    })
    answer.reset()
    await expect(insert).rejects.toThrow()
    await sql`drop table ${sql.table(table)}`.execute(db)
    await client.end().catch(() => undefined)
    await proxy.close()
  })
})
