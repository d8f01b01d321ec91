import { sql } from 'kysely'
import { describe, expect, test, withEmptyDatabase } from '@baton/testing'
import { createDb, type Db } from '../src/db.ts'
import {
  DISTRIBUTED_TABLES,
  DistributionKeyError,
  partitionLedgerByHash,
} from '../src/distribution.ts'
import { migrateToLatest } from '../src/migrate.ts'

/** A freshly migrated ledger of its own, changed by `alter`, then hash-partitioned. */
async function partitionAfter(
  databaseUrl: string,
  alter: string,
  check: (db: Db, built: Promise<void>) => Promise<void>,
): Promise<void> {
  await withEmptyDatabase(databaseUrl, async (url) => {
    const db = createDb({ connectionString: url, maxConnections: 1 })
    try {
      await migrateToLatest(db)
      if (alter !== '') await sql.raw(alter).execute(db)
      await check(db, partitionLedgerByHash(db))
    } finally {
      await db.destroy()
    }
  })
}

// Each test migrates a database from zero: longer than a test on a cloned ledger.
describe('the hash-partitioned variant of the ledger', { timeout: 120_000 }, () => {
  test('the migrated ledger builds: every distributed table is partitioned by hash on its distribution column', async ({
    databaseUrl,
  }) => {
    await partitionAfter(databaseUrl, '', async (db, built) => {
      await built
      const keys = await sql<{ table: string; key: string }>`
        select c.relname as table, pg_get_partkeydef(c.oid) as key from pg_class c
        where c.relkind = 'p' and c.relnamespace = 'public'::regnamespace
      `.execute(db)
      expect(new Map(keys.rows.map((r) => [r.table, r.key]))).toEqual(
        new Map(
          Object.entries(DISTRIBUTED_TABLES).map(([table, column]) => [table, `HASH (${column})`]),
        ),
      )
    })
  })

  test('a unique index without the distribution column fails the build, naming its table', async ({
    databaseUrl,
  }) => {
    await partitionAfter(
      databaseUrl,
      'create unique index attempts_fingerprint_key on attempts (fingerprint)',
      async (db, built) => {
        await expect(built).rejects.toThrow(DistributionKeyError)
        await expect(built).rejects.toThrow(
          'attempts: attempts_fingerprint_key is unique without the distribution column session_id',
        )
        // One transaction: nothing of the build is left behind.
        const partitioned = await sql<{ n: number }>`
          select count(*)::int as n from pg_class where relkind = 'p'
        `.execute(db)
        expect(partitioned.rows[0]?.n).toBe(0)
      },
    )
  })

  test('a foreign key between distributed tables that leaves out the distribution column fails the build', async ({
    databaseUrl,
  }) => {
    await partitionAfter(
      databaseUrl,
      `alter table attempts add constraint attempts_cause_fkey
         foreign key (parent_run_id, namespace_id) references runs (id, session_id)`,
      async (_db, built) => {
        await expect(built).rejects.toThrow(
          'foreign key attempts_cause_fkey of attempts does not pair the distribution columns of attempts and runs',
        )
      },
    )
  })

  test('a table that is neither distributed nor a reference table fails the build', async ({
    databaseUrl,
  }) => {
    await partitionAfter(
      databaseUrl,
      'create table budgets (id uuid primary key)',
      async (_db, built) => {
        await expect(built).rejects.toThrow(
          'tables neither distributed nor reference (add each to DISTRIBUTED_TABLES or REFERENCE_TABLES): budgets',
        )
      },
    )
  })
})
