import { Kysely, PostgresDialect } from 'kysely'
import pg from 'pg'
import type { DB } from './schema.ts'

export type Db = Kysely<DB>

export interface CreateDbOptions {
  readonly connectionString: string
  /** Pool size. Claims and commits run on separate pooled connections, never on one. */
  readonly maxConnections?: number
  readonly applicationName?: string
}

/** A Kysely instance over a pg pool. `db.destroy()` ends the pool. */
export function createDb(options: CreateDbOptions): Db {
  const pool = new pg.Pool({
    connectionString: options.connectionString,
    max: options.maxConnections ?? 10,
    application_name: options.applicationName ?? 'baton',
  })
  // An idle client's error (a killed backend, a restarted server) must not crash the process;
  // the pool drops the client and the next query gets a fresh one.
  pool.on('error', () => {})
  return new Kysely<DB>({ dialect: new PostgresDialect({ pool }) })
}
