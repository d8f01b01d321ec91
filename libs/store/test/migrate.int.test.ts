import { randomUUID } from 'node:crypto'
import pg from 'pg'
import { sql } from 'kysely'
import { describe, expect, test } from '@baton/testing'
import { createDb } from '../src/db.ts'
import { migrateTo, migrateToLatest, pendingMigrations } from '../src/migrate.ts'

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
          '0005-failure-categories',
          '0006-namespaces',
          '0007-continuations',
          '0008-artifacts',
          '0009-heartbeats',
          '0010-attempt-statistics',
          '0011-transition-audit',
          '0012-terminal-time',
          '0013-continuation-content-by-reference',
          '0014-run-leases',
          '0015-continuation-indexes',
        ])
        expect((await migrateToLatest(db)).applied).toEqual([
          '0001-ledger',
          '0002-steering',
          '0003-idempotency',
          '0004-context',
          '0005-failure-categories',
          '0006-namespaces',
          '0007-continuations',
          '0008-artifacts',
          '0009-heartbeats',
          '0010-attempt-statistics',
          '0011-transition-audit',
          '0012-terminal-time',
          '0013-continuation-content-by-reference',
          '0014-run-leases',
          '0015-continuation-indexes',
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
            'runs',
            'continuations',
            'artifacts',
            'namespace_usage',
          ]),
        )
        // Autovacuum analyzes the attempts after every 5,000 changed rows, whatever the size of
        // the table (see 0010-attempt-statistics.ts).
        const options = await sql<{ reloptions: string[] | null }>`
          select reloptions from pg_class where oid = 'attempts'::regclass
        `.execute(db)
        expect(options.rows[0]?.reloptions).toEqual([
          'autovacuum_analyze_scale_factor=0',
          'autovacuum_analyze_threshold=5000',
        ])
        // The audit names its attempt without a foreign key (see 0011-transition-audit.ts).
        const keys = await sql<{ n: number }>`
          select count(*)::int as n from pg_constraint
          where conrelid = 'attempt_transitions'::regclass and contype = 'f'
        `.execute(db)
        expect(keys.rows[0]?.n).toBe(0)
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
          '0005-failure-categories',
          '0006-namespaces',
          '0007-continuations',
          '0008-artifacts',
          '0009-heartbeats',
          '0010-attempt-statistics',
          '0011-transition-audit',
          '0012-terminal-time',
          '0013-continuation-content-by-reference',
          '0014-run-leases',
          '0015-continuation-indexes',
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

  test('0005 rewrites stored failure categories into the one vocabulary, and a rerun changes nothing', async ({
    databaseUrl,
  }) => {
    await withEmptyDatabase(databaseUrl, async (url) => {
      const db = createDb({ connectionString: url, maxConnections: 2 })
      try {
        await migrateTo(db, '0004-context')
        // What earlier versions could store: old spellings, known values, a provider's free text.
        const stored: Record<string, string | null> = {
          refused: 'refusal',
          aborted: 'cancelled',
          cancelled: 'cancelled',
          max_tokens: 'max_tokens',
          process_lost: 'process_lost',
          structured_output_invalid: 'structured_output_invalid',
          'tool exploded: /srv/secret': 'provider_fault',
          ['x'.repeat(5000)]: 'provider_fault',
        }
        const rows = [...Object.keys(stored), null].map((category) => ({
          id: randomUUID(),
          category,
        }))
        await sql`
          insert into sessions (id, namespace_id) values ('s', 'default');
        `.execute(db)
        for (const row of rows) {
          const agentId = randomUUID()
          await sql`insert into agents (id, session_id, name) values (${agentId}, 's', 'x')`.execute(
            db,
          )
          await sql`
            insert into attempts (id, agent_id, session_id, name, prompt, status, stop_reason,
                                  output_digest, output_bytes, fingerprint, terminal_at,
                                  failure_category)
            values (${row.id}, ${agentId}, 's', 'x', '[]', 'terminal', 'error', 'd', 0, 'f', now(),
                    ${row.category})
          `.execute(db)
        }
        const read = async () => {
          const result = await sql<{ id: string; failure_category: string | null }>`
            select id, failure_category from attempts
          `.execute(db)
          return new Map(result.rows.map((r) => [r.id, r.failure_category]))
        }

        expect((await migrateTo(db, '0005-failure-categories')).applied).toEqual([
          '0005-failure-categories',
        ])
        const after = await read()
        for (const row of rows)
          expect(after.get(row.id)).toBe(row.category === null ? null : stored[row.category])

        // Idempotent: running the statement again over normalised rows changes nothing.
        await sql`delete from kysely_migration where name = '0005-failure-categories'`.execute(db)
        expect((await migrateTo(db, '0005-failure-categories')).applied).toEqual([
          '0005-failure-categories',
        ])
        expect(await read()).toEqual(after)

        // 0006 keeps every existing row in the namespace it was written in.
        expect((await migrateToLatest(db)).applied).toEqual([
          '0006-namespaces',
          '0007-continuations',
          '0008-artifacts',
          '0009-heartbeats',
          '0010-attempt-statistics',
          '0011-transition-audit',
          '0012-terminal-time',
          '0013-continuation-content-by-reference',
          '0014-run-leases',
          '0015-continuation-indexes',
        ])
        const owners = await sql<{ namespace_id: string }>`
          select distinct namespace_id from attempts
          union select distinct namespace_id from agents
        `.execute(db)
        expect(owners.rows).toEqual([{ namespace_id: 'default' }])
      } finally {
        await db.destroy()
      }
    })
  })
})
