import { z } from 'zod'

const ms = (fallback: number) => z.coerce.number().int().positive().default(fallback)

/**
 * How long a call to Postgres or Redis may take, the same settings in the API and the worker: each
 * app spreads this shape into its config schema (so they are among its `*_CONFIG_VARIABLES`) and
 * reads them with `dependencyTimeouts`. A call past its bound fails with a transient error and is
 * retried under the caller's rules. A worker's lease renewals do not depend on them: they run on a
 * pool of their own, bounded by the heartbeat interval.
 */
export const dependencyTimeoutsEnvShape = {
  /** A ledger statement's bound (Postgres `statement_timeout`; the pool's deadline a bit later). */
  DB_STATEMENT_TIMEOUT_MS: ms(10_000),
  /** How long a ledger statement waits for a row lock (Postgres `lock_timeout`). */
  DB_LOCK_TIMEOUT_MS: ms(5_000),
  /** A transaction left idle this long is ended by Postgres (`idle_in_transaction_session_timeout`). */
  DB_IDLE_IN_TRANSACTION_TIMEOUT_MS: ms(10_000),
  /** Making a ledger connection, or waiting for a free one of the pool. */
  DB_CONNECT_TIMEOUT_MS: ms(5_000),
  /** A Redis command's bound (blocking reads get theirs on top; BullMQ's job wait is its own). */
  REDIS_COMMAND_TIMEOUT_MS: ms(5_000),
  /** Making a Redis connection. */
  REDIS_CONNECT_TIMEOUT_MS: ms(5_000),
}

export type DependencyTimeoutsEnv = z.infer<z.ZodObject<typeof dependencyTimeoutsEnvShape>>

/** The bounds of an app's dependency calls (the store's `LedgerTimeouts`, the queue's `RedisTimeouts`). */
export interface DependencyTimeouts {
  readonly ledger: {
    readonly statementTimeoutMs: number
    readonly lockTimeoutMs: number
    readonly idleInTransactionTimeoutMs: number
    readonly connectTimeoutMs: number
  }
  readonly redis: { readonly commandTimeoutMs: number; readonly connectTimeoutMs: number }
}

export function dependencyTimeouts(env: DependencyTimeoutsEnv): DependencyTimeouts {
  return Object.freeze({
    ledger: Object.freeze({
      statementTimeoutMs: env.DB_STATEMENT_TIMEOUT_MS,
      lockTimeoutMs: env.DB_LOCK_TIMEOUT_MS,
      idleInTransactionTimeoutMs: env.DB_IDLE_IN_TRANSACTION_TIMEOUT_MS,
      connectTimeoutMs: env.DB_CONNECT_TIMEOUT_MS,
    }),
    redis: Object.freeze({
      commandTimeoutMs: env.REDIS_COMMAND_TIMEOUT_MS,
      connectTimeoutMs: env.REDIS_CONNECT_TIMEOUT_MS,
    }),
  })
}
