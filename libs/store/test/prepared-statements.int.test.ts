import { sql } from 'kysely'
import { describe, expect, test } from '@baton/testing'
import { bytesSurvivingScavengesAwaited } from '@baton/testing/young-generation'
import { createDb, type CreateDbOptions, type Db } from '../src/db.ts'

/** One connection, so what it prepared can be read back on it. */
function oneConnection(databaseUrl: string, options: Partial<CreateDbOptions> = {}) {
  return createDb({ connectionString: databaseUrl, maxConnections: 1, ...options })
}

async function prepared(db: Db): Promise<string[]> {
  const rows = await sql<{ statement: string }>`
    select statement from pg_prepared_statements order by prepare_time`.execute(db)
  return rows.rows.map((r) => r.statement)
}

describe('prepared statements', () => {
  test('a connection prepares a parameterised statement once and reuses it', async ({
    databaseUrl,
  }) => {
    const db = oneConnection(databaseUrl)
    try {
      for (const n of [1, 2, 3]) {
        const { rows } = await sql<{ n: number }>`select ${n}::int as n`.execute(db)
        expect(rows).toEqual([{ n }])
      }
      // The reading statement has no parameter: it runs unnamed and is not listed.
      expect(await prepared(db)).toEqual(['select $1::int as n'])
    } finally {
      await db.destroy()
    }
  })

  test('turned off, nothing is prepared', async ({ databaseUrl }) => {
    const db = oneConnection(databaseUrl, { preparedStatements: false })
    try {
      await sql`select ${1}::int as n`.execute(db)
      expect(await prepared(db)).toEqual([])
    } finally {
      await db.destroy()
    }
  })

  test('past the limit a new text runs unnamed, with the same answer', async ({ databaseUrl }) => {
    const db = oneConnection(databaseUrl, { preparedStatementLimit: 2 })
    try {
      await sql`select ${1}::int as a`.execute(db)
      await sql`select ${2}::int as b`.execute(db)
      const third = await sql<{ c: number }>`select ${3}::int as c`.execute(db)
      expect(third.rows).toEqual([{ c: 3 }])
      expect(await prepared(db)).toEqual(['select $1::int as a', 'select $1::int as b'])
    } finally {
      await db.destroy()
    }
  })

  test('a script of several statements without parameters still runs', async ({ databaseUrl }) => {
    const db = oneConnection(databaseUrl)
    try {
      await sql`create table script_a (x int); create table script_b (y int)`.execute(db)
      const { rows } = await sql<{ n: string }>`
        select count(*) as n from pg_tables where tablename in ('script_a', 'script_b')`.execute(db)
      expect(rows).toEqual([{ n: '2' }])
    } finally {
      await db.destroy()
    }
  })

  /**
   * A one-connection pool that has prepared `select * from <table>`, then a migration from
   * another connection adds a column: the prepared plan's result type is now stale.
   */
  async function preparedThenAltered(
    databaseUrl: string,
    migrator: Db,
    table: string,
  ): Promise<Db> {
    await sql`create table ${sql.table(table)} (id int primary key)`.execute(migrator)
    await sql`insert into ${sql.table(table)} values (1)`.execute(migrator)
    const db = oneConnection(databaseUrl)
    const before = await selectFrom(db, table)
    expect(before.rows).toEqual([{ id: 1 }])
    await sql`alter table ${sql.table(table)} add column note text default 'added'`.execute(
      migrator,
    )
    return db
  }
  const selectFrom = (db: Db, table: string) =>
    sql`select * from ${sql.table(table)} where id = ${1}`.execute(db)

  test('a table altered under a prepared select: the next run answers with the new shape', async ({
    databaseUrl,
    db: migrator,
  }) => {
    const db = await preparedThenAltered(databaseUrl, migrator, 'shifting')
    try {
      expect((await selectFrom(db, 'shifting')).rows).toEqual([{ id: 1, note: 'added' }])
    } finally {
      await db.destroy()
    }
  })

  test('inside a transaction a stale plan fails the transaction; the connection then recovers', async ({
    databaseUrl,
    db: migrator,
  }) => {
    const db = await preparedThenAltered(databaseUrl, migrator, 'shifting_tx')
    try {
      // Re-running a statement inside a transaction is not the client's call: it fails.
      await expect(
        db.transaction().execute((tx) => selectFrom(tx, 'shifting_tx')),
      ).rejects.toMatchObject({ code: '0A000' })
      expect((await selectFrom(db, 'shifting_tx')).rows).toEqual([{ id: 1, note: 'added' }])
    } finally {
      await db.destroy()
    }
  })

  test.for([
    ['named', {}],
    ['unnamed', { preparedStatements: false }],
  ] as const)(
    'what a statement allocates dies young, its query, rows and messages (%s)',
    async ([, options], { databaseUrl }) => {
      const db = oneConnection(databaseUrl, options)
      try {
        let n = 0
        const statement = () => sql`select ${(n += 1)}::int as n, now() as at`.execute(db)
        for (let i = 0; i < 500; i += 1) await statement()
        // Through node-postgres's promise form of `query` about 1.7 KB per statement outlived two
        // scavenges (see prepared-statements.ts); through its callback form, under 0.1 KB.
        expect(await bytesSurvivingScavengesAwaited(statement)).toBeLessThan(600)
      } finally {
        await db.destroy()
      }
    },
  )
})
