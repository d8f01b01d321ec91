import { setTimeout as sleep } from 'node:timers/promises'
import { sql } from 'kysely'
import { describe, expect, test } from '@baton/testing'
import { createDb } from '../src/db.ts'

describe('connection pool', () => {
  test('a checked-out connection whose backend is terminated does not crash the process', async ({
    databaseUrl,
    db: observer,
  }) => {
    const errors: Error[] = []
    const db = createDb({
      connectionString: databaseUrl,
      maxConnections: 2,
      onConnectionError: (e) => errors.push(e),
    })
    try {
      await db.connection().execute(async (conn) => {
        const pid = await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(conn)
        // Terminated while checked out with no query in flight: the error arrives as an event.
        await sql`select pg_terminate_backend(${pid.rows[0]?.pid ?? 0})`.execute(observer)
        await sleep(200)
      })
      expect(errors.length).toBeGreaterThan(0)
      // The pool discards the broken client and serves the next query on a fresh one.
      const ok = await sql<{ one: number }>`select 1 as one`.execute(db)
      expect(ok.rows).toEqual([{ one: 1 }])
    } finally {
      await db.destroy()
    }
  })
})
