import { Kysely, PostgresDialect, type LogEvent } from 'kysely'
import pg from 'pg'
import { preparingClientClass } from './prepared-statements.ts'
import type { DB } from './schema.ts'

export type Db = Kysely<DB>

export interface CreateDbOptions {
  readonly connectionString: string
  /** Pool size. Claims and commits run on separate pooled connections, never on one. */
  readonly maxConnections?: number
  readonly applicationName?: string
  /** Told about connections that died (for logging); nothing else is needed to recover. */
  readonly onConnectionError?: (error: Error) => void
  /**
   * Told each statement once it finished or failed, with its parameters: for tests that count
   * the statements a component issues. Absent, statements are not observed at all.
   */
  readonly onQuery?: ((sql: string, parameters: readonly unknown[]) => void) | undefined
  /**
   * Prepare each parameterised statement once per connection (default true; see
   * prepared-statements.ts). Off for a connection pooler that does not keep named statements
   * across transactions, such as PgBouncer in transaction mode before 1.21.
   */
  readonly preparedStatements?: boolean
  /** Most distinct statement texts the pool names; later ones run unnamed. Default 256. */
  readonly preparedStatementLimit?: number
  /** How long ledger calls may take (absent: unbounded, for migrations and scripts). */
  readonly timeouts?: LedgerTimeouts
}

/**
 * The bounds of every call a service makes to the ledger. The first three are Postgres settings,
 * sent as startup parameters of each connection: the server cancels a statement, a lock wait or an
 * idle transaction itself (its error is transient, the connection survives). A server or network
 * that stops answering cannot cancel anything, so the pool also keeps a deadline of its own on
 * each statement (`statementTimeoutMs` and a quarter second): past it the call fails with
 * `LedgerTimeoutError` and its connection is closed. That deadline needs nothing from the
 * server, so it holds behind a pooler too. PgBouncer refuses unknown startup parameters: behind it,
 * list `statement_timeout, lock_timeout, idle_in_transaction_session_timeout` in its
 * `ignore_startup_parameters`, and set the server's own (`ALTER ROLE … SET lock_timeout = …`, and
 * the other two) or PgBouncer's `query_timeout` and `idle_transaction_timeout`.
 */
export interface LedgerTimeouts {
  readonly statementTimeoutMs: number
  readonly lockTimeoutMs: number
  readonly idleInTransactionTimeoutMs: number
  /** Making a connection, and waiting for a free one of the pool (pg's `connectionTimeoutMillis`). */
  readonly connectTimeoutMs: number
}

/** How much longer than `statement_timeout` the pool waits before it closes the connection. */
export const STATEMENT_DEADLINE_GRACE_MS = 250

/** A Kysely instance over a pg pool. `db.destroy()` ends the pool. */
export function createDb(options: CreateDbOptions): Db {
  const timeouts = options.timeouts
  const pool = new pg.Pool({
    connectionString: options.connectionString,
    max: options.maxConnections ?? 10,
    application_name: options.applicationName ?? 'baton',
    Client: preparingClientClass(
      options.preparedStatements === false ? 0 : (options.preparedStatementLimit ?? 256),
      timeouts === undefined ? 0 : timeouts.statementTimeoutMs + STATEMENT_DEADLINE_GRACE_MS,
    ),
    ...(timeouts === undefined
      ? {}
      : {
          statement_timeout: timeouts.statementTimeoutMs,
          lock_timeout: timeouts.lockTimeoutMs,
          idle_in_transaction_session_timeout: timeouts.idleInTransactionTimeoutMs,
          connectionTimeoutMillis: timeouts.connectTimeoutMs,
        }),
  })
  // A client's connection can die at any moment (a terminated backend, a restarted server). An
  // 'error' event nobody listens to would crash the process: the pool listens for idle clients
  // only, so every client gets a listener of its own for the time it is checked out. A query in
  // flight still fails with the error (and is retried where that is safe); the broken client is
  // discarded on release and the next query gets a fresh connection.
  const onError = options.onConnectionError ?? (() => {})
  pool.on('error', onError)
  pool.on('connect', (client) => client.on('error', onError))
  const onQuery = options.onQuery
  return new Kysely<DB>({
    dialect: new PostgresDialect({ pool }),
    ...(onQuery === undefined
      ? {}
      : { log: (event: LogEvent) => onQuery(event.query.sql, event.query.parameters) }),
  })
}
