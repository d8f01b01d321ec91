import { randomUUID } from 'node:crypto'
import { sql } from 'kysely'
import { describe, expect, startFaultProxy, test } from '@baton/testing'
import { LedgerTimeoutError, classifyStoreError, createDb, type Db } from '../src/index.ts'

const TIMEOUTS = {
  statementTimeoutMs: 300,
  lockTimeoutMs: 200,
  idleInTransactionTimeoutMs: 1_000,
  connectTimeoutMs: 400,
}

/** The error a call fails with (the test fails if it succeeds). */
async function failure(call: Promise<unknown>): Promise<unknown> {
  return call.then(
    () => {
      throw new Error('the call succeeded')
    },
    (error: unknown) => error,
  )
}

const one = (db: Db) => sql<{ n: number }>`select 1 as n`.execute(db)

describe('ledger timeouts', () => {
  test('the server cancels a slow statement and a long lock wait: transient, the pool goes on', async ({
    databaseUrl,
    db,
  }) => {
    const bounded = createDb({
      connectionString: databaseUrl,
      maxConnections: 2,
      timeouts: TIMEOUTS,
    })
    try {
      const slow = await failure(sql`select pg_sleep(5)`.execute(bounded))
      expect((slow as { code?: string }).code).toBe('57014')
      expect(classifyStoreError(slow)).toBe('transient')

      const table = `locked_${randomUUID().replaceAll('-', '')}`
      await sql`create table ${sql.table(table)} (id int primary key)`.execute(db)
      await sql`insert into ${sql.table(table)} values (1)`.execute(db)
      const waited = await db.transaction().execute(async (trx) => {
        await sql`select id from ${sql.table(table)} where id = 1 for update`.execute(trx)
        return failure(sql`update ${sql.table(table)} set id = 1 where id = 1`.execute(bounded))
      })
      expect((waited as { code?: string }).code).toBe('55P03')
      expect(classifyStoreError(waited)).toBe('transient')
      expect((await one(bounded)).rows[0]?.n).toBe(1)
      await sql`drop table ${sql.table(table)}`.execute(db)
    } finally {
      await bounded.destroy()
    }
  })

  test('a connection that stops answering: the call fails at its deadline and the next one gets a fresh connection', async ({
    databaseUrl,
    track,
  }) => {
    const proxy = track(await startFaultProxy(databaseUrl))
    const bounded = createDb({ connectionString: proxy.url, maxConnections: 2, timeouts: TIMEOUTS })
    try {
      expect((await one(bounded)).rows[0]?.n).toBe(1)
      proxy.stall({ existingOnly: true })
      const hung = await failure(one(bounded))
      expect(hung).toBeInstanceOf(LedgerTimeoutError)
      expect(classifyStoreError(hung)).toBe('transient')
      // The stalled connection was closed; a new one goes through.
      expect((await one(bounded)).rows[0]?.n).toBe(1)

      // A server that accepts connections and answers nothing: the connect times out.
      proxy.stall()
      proxy.reset()
      const unanswered = await failure(one(bounded))
      expect(classifyStoreError(unanswered), String(unanswered)).toBe('transient')
      proxy.resume()
      expect((await one(bounded)).rows[0]?.n).toBe(1)
    } finally {
      await bounded.destroy()
      await proxy.close()
    }
  })
})
