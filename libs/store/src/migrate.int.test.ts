import { randomUUID } from 'node:crypto'
import pg from 'pg'
import { sql } from 'kysely'
import { describe, expect, test } from '@baton/testing'
import { createDb } from './db.ts'
import { migrateToLatest, pendingMigrations } from './migrate.ts'

/** A fresh, empty database (not cloned from the template) for migration tests. */
async function withEmptyDatabase(
  rootUrl: string,
  run: (url: string) => Promise<void>,
): Promise<void> {
  const name = `baton_m_${randomUUID().replaceAll('-', '').slice(0, 12)}`
  const admin = new pg.Client({ connectionString: rootUrl })
  await admin.connect()
  await admin.query(`create database ${name}`)
  try {
    const url = new URL(rootUrl)
    url.pathname = `/${name}`
    await run(url.toString())
  } finally {
    await admin.query(`drop database ${name} with (force)`)
    await admin.end()
  }
}

describe('migrations', () => {
  test('migrate from zero creates the ledger, and re-running is a no-op', async ({
    databaseUrl,
  }) => {
    await withEmptyDatabase(databaseUrl, async (url) => {
      const db = createDb({ connectionString: url, maxConnections: 2 })
      try {
        expect(await pendingMigrations(db)).toEqual([
          '0001-ledger',
          '0002-steering',
          '0003-idempotency',
          '0004-context',
        ])
        expect((await migrateToLatest(db)).applied).toEqual([
          '0001-ledger',
          '0002-steering',
          '0003-idempotency',
          '0004-context',
        ])
        const tables = await sql<{ table_name: string }>`
          select table_name from information_schema.tables where table_schema = 'public' order by 1
        `.execute(db)
        expect(tables.rows.map((r) => r.table_name)).toEqual(
          expect.arrayContaining([
            'namespaces',
            'sessions',
            'agents',
            'attempts',
            'attempt_transitions',
            'agent_context_events',
          ]),
        )
        expect((await migrateToLatest(db)).applied).toEqual([])
        expect(await pendingMigrations(db)).toEqual([])
      } finally {
        await db.destroy()
      }
    })
  })

  test('two migrators running at once both succeed and apply each migration once', async ({
    databaseUrl,
  }) => {
    await withEmptyDatabase(databaseUrl, async (url) => {
      const a = createDb({ connectionString: url, maxConnections: 2 })
      const b = createDb({ connectionString: url, maxConnections: 2 })
      try {
        const [ra, rb] = await Promise.all([migrateToLatest(a), migrateToLatest(b)])
        expect([...ra.applied, ...rb.applied]).toEqual([
          '0001-ledger',
          '0002-steering',
          '0003-idempotency',
          '0004-context',
        ])
        const executed = await sql<{
          n: number
        }>`select count(*)::int as n from kysely_migration`.execute(a)
        expect(executed.rows[0]?.n).toBe(ra.applied.length + rb.applied.length)
      } finally {
        await a.destroy()
        await b.destroy()
      }
    })
  })
})
