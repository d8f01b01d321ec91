import { sql, type Kysely } from 'kysely'
import {
  Migrator,
  type Migration,
  type MigrationProvider,
  type MigrationResultSet,
} from 'kysely/migration'
import type { Db } from './db.ts'
import * as m0001 from './migrations/0001-ledger.ts'
import * as m0002 from './migrations/0002-steering.ts'
import * as m0003 from './migrations/0003-idempotency.ts'
import * as m0004 from './migrations/0004-context.ts'
import * as m0005 from './migrations/0005-failure-categories.ts'
import * as m0006 from './migrations/0006-namespaces.ts'
import * as m0007 from './migrations/0007-continuations.ts'
import * as m0008 from './migrations/0008-artifacts.ts'
import * as m0009 from './migrations/0009-heartbeats.ts'
import * as m0010 from './migrations/0010-attempt-statistics.ts'
import * as m0011 from './migrations/0011-transition-audit.ts'
import * as m0012 from './migrations/0012-terminal-time.ts'
import * as m0013 from './migrations/0013-continuation-content-by-reference.ts'
import * as m0014 from './migrations/0014-run-leases.ts'
import * as m0015 from './migrations/0015-continuation-indexes.ts'
import * as m0020 from './migrations/0020-artifact-chunks.ts'
import * as m0021 from './migrations/0021-namespace-limits.ts'
import * as m0030 from './migrations/0030-webhooks.ts'
import * as m0040 from './migrations/0040-hosted-sessions.ts'
import * as m0041 from './migrations/0041-session-events.ts'
import * as m0042 from './migrations/0042-nested-delegations.ts'
import * as m0043 from './migrations/0043-attempt-usage.ts'
import * as m0050 from './migrations/0050-ledger-retention.ts'
import * as m0051 from './migrations/0051-heap-only-renewals.ts'
import * as m0052 from './migrations/0052-retention-key-indexes.ts'
import * as m0055 from './migrations/0055-planned-webhook-enqueue.ts'
import * as m0070 from './migrations/0070-distribution-key.ts'
import * as m0080 from './migrations/0080-attempt-depth.ts'
import * as m0085 from './migrations/0085-hosted-run-idempotency.ts'

/** Every migration, in order. Numbered and append-only. */
const MIGRATIONS: Readonly<Record<string, Migration>> = {
  '0001-ledger': m0001,
  '0002-steering': m0002,
  '0003-idempotency': m0003,
  '0004-context': m0004,
  '0005-failure-categories': m0005,
  '0006-namespaces': m0006,
  '0007-continuations': m0007,
  '0008-artifacts': m0008,
  '0009-heartbeats': m0009,
  '0010-attempt-statistics': m0010,
  '0011-transition-audit': m0011,
  '0012-terminal-time': m0012,
  '0013-continuation-content-by-reference': m0013,
  '0014-run-leases': m0014,
  '0015-continuation-indexes': m0015,
  '0020-artifact-chunks': m0020,
  '0021-namespace-limits': m0021,
  '0030-webhooks': m0030,
  '0040-hosted-sessions': m0040,
  '0041-session-events': m0041,
  '0042-nested-delegations': m0042,
  '0043-attempt-usage': m0043,
  '0050-ledger-retention': m0050,
  '0051-heap-only-renewals': m0051,
  '0052-retention-key-indexes': m0052,
  '0055-planned-webhook-enqueue': m0055,
  '0070-distribution-key': m0070,
  '0080-attempt-depth': m0080,
  '0085-hosted-run-idempotency': m0085,
}

const provider: MigrationProvider = {
  getMigrations: () => Promise.resolve({ ...MIGRATIONS }),
}

/** Advisory lock key shared by every Baton migrator ("baton-mg" as a 64-bit integer). */
const MIGRATION_LOCK_KEY = 0x626174_6f6e2d6dn

export interface MigrationReport {
  readonly applied: readonly string[]
}

/**
 * Brings the schema to the latest migration. Safe when many processes run it at once, directly or
 * through PgBouncer in transaction mode: see `runLocked`.
 */
export function migrateToLatest(db: Db): Promise<MigrationReport> {
  return runLocked(db, (migrator) => migrator.migrateToLatest())
}

/** Brings the schema up to `target` (a migration name) and no further: tests of a migration. */
export function migrateTo(db: Db, target: string): Promise<MigrationReport> {
  if (!(target in MIGRATIONS)) throw new Error(`unknown migration ${target}`)
  return runLocked(db, (migrator) => migrator.migrateTo(target))
}

/**
 * One transaction for the whole run, which first takes a transaction-scoped advisory lock: one
 * migrator at a time creates Kysely's bookkeeping tables, reads what was applied and applies the
 * rest, and the lock goes with the commit, so the next one reads a committed schema and finds
 * nothing to do. Nothing outlives the transaction: a session lock would stay with whichever
 * server connection a transaction-mode pooler happened to use, where another client could take
 * it again (advisory locks are re-entrant within a session) or unlock it from a different one.
 * Kysely's own lock, taken and released inside this transaction, is then uncontended.
 */
function runLocked(
  db: Db,
  run: (migrator: Migrator) => Promise<MigrationResultSet>,
): Promise<MigrationReport> {
  return db.transaction().execute(async (trx) => {
    await sql`select pg_advisory_xact_lock(${MIGRATION_LOCK_KEY.toString()}::bigint)`.execute(trx)
    // A failed migration aborts the transaction, and Kysely's unlock after it then fails too and
    // is what it reports: the migration's own error is kept here to be thrown instead.
    let failure: unknown
    const recording: MigrationProvider = {
      getMigrations: () =>
        Promise.resolve(
          Object.fromEntries(
            Object.entries(MIGRATIONS).map(([name, migration]) => [
              name,
              {
                ...migration,
                up: (db: Kysely<unknown>) =>
                  migration.up(db).catch((error: unknown) => {
                    failure ??= error
                    throw error
                  }),
              },
            ]),
          ),
        ),
    }
    const result = await run(new Migrator({ db: trx, provider: recording }))
    const error = failure ?? result.error
    if (error !== undefined) {
      throw error instanceof Error ? error : new Error('migration failed', { cause: error })
    }
    return {
      applied: (result.results ?? [])
        .filter((r) => r.status === 'Success')
        .map((r) => r.migrationName),
    }
  })
}

/** Names of migrations not yet applied (empty when the schema is current). */
export async function pendingMigrations(db: Db): Promise<string[]> {
  const migrator = new Migrator({ db, provider })
  const all = await migrator.getMigrations()
  return all.filter((m) => m.executedAt === undefined).map((m) => m.name)
}
