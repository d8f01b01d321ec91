import { setTimeout as sleep } from 'node:timers/promises'
import { DependencyFailure, TRANSIENT_SOCKET_CODES } from '@baton/contracts'

/** SQLSTATE knowledge lives here and nowhere else. */
export const SqlState = {
  UniqueViolation: '23505',
  ForeignKeyViolation: '23503',
  SerializationFailure: '40001',
  DeadlockDetected: '40P01',
  /** The server is shutting down (a fast shutdown, a failover's demotion). */
  AdminShutdown: '57P01',
  /** The server crashed and is restarting: every backend was told to quit. */
  CrashShutdown: '57P02',
  /** The server is starting up or in recovery (a promoted standby not yet open). */
  CannotConnectNow: '57P03',
  /** A write reached a server that is read-only now (a former primary, a standby). */
  ReadOnlySqlTransaction: '25006',
  /** The session sat in a transaction past `idle_in_transaction_session_timeout` and was ended. */
  IdleInTransactionSessionTimeout: '25P03',
  /** `max_connections` reached (no slot for a new backend). */
  TooManyConnections: '53300',
  /** A server limit reached (lock table, shared memory). */
  ConfigurationLimitExceeded: '53400',
  /** Cancelled: `statement_timeout`, or a cancel request. */
  QueryCanceled: '57014',
  /** `lock_timeout`, or `nowait` on a locked row. */
  LockNotAvailable: '55P03',
} as const

/** Codes (besides class 08, connection exception) that a retry may get past. */
const TRANSIENT_SQLSTATES: ReadonlySet<string> = new Set([
  SqlState.SerializationFailure,
  SqlState.DeadlockDetected,
  SqlState.AdminShutdown,
  SqlState.CrashShutdown,
  SqlState.CannotConnectNow,
  SqlState.ReadOnlySqlTransaction,
  SqlState.IdleInTransactionSessionTimeout,
  SqlState.TooManyConnections,
  SqlState.ConfigurationLimitExceeded,
  SqlState.QueryCanceled,
  SqlState.LockNotAvailable,
  '53000', // insufficient_resources
  '53100', // disk_full
  '53200', // out_of_memory
])

/**
 * What node-postgres and its pool say when a connection broke, could not be made in time, or a
 * call outlived its deadline (they carry no code).
 */
const TRANSIENT_CLIENT_MESSAGE =
  /^(Connection terminated|Client has encountered a connection error|timeout exceeded when trying to connect|Query read timeout|connection timeout)/i

/**
 * A ledger call that got no answer within the pool's deadline (see `createDb`): its connection was
 * closed, so whatever the statement did or will do is unknown; fenced writes replay exactly.
 */
export class LedgerTimeoutError extends Error {
  readonly timeoutMs: number
  constructor(timeoutMs: number, options?: ErrorOptions) {
    super(`the ledger did not answer within ${timeoutMs} ms; the connection was closed`, options)
    this.name = 'LedgerTimeoutError'
    this.timeoutMs = timeoutMs
  }
}

interface PgErrorLike {
  readonly code?: unknown
  readonly constraint?: unknown
}

function asPgError(error: unknown): PgErrorLike | undefined {
  return typeof error === 'object' && error !== null ? error : undefined
}

/**
 * The one classification of ledger errors (see `DependencyFailure`):
 * - transient: SQLSTATE class 08 (connection exception) and the failover, overload, cancel and
 *   lock codes of `TRANSIENT_SQLSTATES`; the socket errors of a connection that broke; node-postgres'
 *   own connection and timeout errors; a `LedgerTimeoutError`;
 * - bad input: class 22 (a value Postgres refused) and 23 (a constraint the values broke);
 * - bug: everything else.
 * Postgres never confirms loss by an error: a fenced statement answers it as an outcome.
 */
export function classifyStoreError(error: unknown): DependencyFailure {
  if (error instanceof LedgerTimeoutError) return DependencyFailure.Transient
  const e = asPgError(error)
  if (e === undefined) return DependencyFailure.Bug
  const code = typeof e.code === 'string' ? e.code : ''
  if (code.length === 5 && code.startsWith('08')) return DependencyFailure.Transient
  if (TRANSIENT_SQLSTATES.has(code) || TRANSIENT_SOCKET_CODES.has(code))
    return DependencyFailure.Transient
  if (code.length === 5 && (code.startsWith('22') || code.startsWith('23')))
    return DependencyFailure.BadInput
  if (code === '' && error instanceof Error && TRANSIENT_CLIENT_MESSAGE.test(error.message))
    return DependencyFailure.Transient
  // A wrapper (an AggregateError of several addresses, a cause chain) says what its cause says.
  const cause = (error as { cause?: unknown }).cause
  if (code === '' && cause !== undefined && cause !== error) return classifyStoreError(cause)
  if (code === '' && error instanceof AggregateError) {
    const inner: unknown[] = error.errors
    if (inner.length > 0 && inner.every((i) => classifyStoreError(i) === 'transient'))
      return DependencyFailure.Transient
  }
  return DependencyFailure.Bug
}

export function isUniqueViolation(error: unknown, constraint?: string): boolean {
  const e = asPgError(error)
  return (
    e?.code === SqlState.UniqueViolation &&
    (constraint === undefined || e.constraint === constraint)
  )
}

/**
 * Whether Postgres refused a value itself (SQLSTATE class 22, data exception: e.g. 22P05 or 22021,
 * a character it cannot store; 22001, a string too long). The caller sent it, so no retry helps and
 * the statement's other items did nothing wrong; callers answer it as bad input.
 */
export function isDataError(error: unknown): boolean {
  const code = asPgError(error)?.code
  return typeof code === 'string' && code.length === 5 && code.startsWith('22')
}

/**
 * The `isolate` rule of the ledger's group batchers (see createGroupBatcher): a group that failed
 * with an unexpected error is run again one item at a time, so one item the ledger refuses (a
 * value Postgres cannot take) fails alone and its neighbours get their results. Re-running is
 * safe: a failed statement wrote nothing. A transient error fails the group as it is; each item's
 * caller retries under its own rules.
 */
export const isolateUnexpected = (error: unknown): boolean => !isTransientStoreError(error)

/** Whether a failed store call may succeed if simply tried again (see `classifyStoreError`). */
export function isTransientStoreError(error: unknown): boolean {
  return classifyStoreError(error) === DependencyFailure.Transient
}

export interface RetryTransientOptions {
  /**
   * Ceiling of the wait between tries (it doubles from 50 ms up to this). The worker passes its
   * heartbeat interval: an owner that keeps its lease retries at least as often as it renews it.
   */
  readonly maxDelayMs: number
  /** Most tries in all; unbounded when absent (the caller's ownership or signal bounds it). */
  readonly maxAttempts?: number
  /** Ends the retrying: a pending wait stops and the last error is thrown. */
  readonly signal?: AbortSignal
  /** Told about each transient failure before the wait that follows it. */
  readonly onRetry?: (error: unknown, delayMs: number) => void
  /**
   * Which failures are transient; `isTransientStoreError` unless given (a caller outside the store,
   * such as a script talking HTTP to a restarting API, brings its own).
   */
  readonly transient?: (error: unknown) => boolean
}

/**
 * Runs `fn` again while it fails transiently (`isTransientStoreError` unless told otherwise); any other error, the
 * last allowed try, or an aborted `signal` ends it with the error. The one retry policy of Baton:
 * only for reads and for writes whose retry is safe (fenced commits replay exactly).
 */
export async function retryTransient<T>(
  fn: () => Promise<T>,
  options: RetryTransientOptions,
): Promise<T> {
  const transient = options.transient ?? isTransientStoreError
  let delayMs = Math.min(50, options.maxDelayMs)
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await fn()
    } catch (error) {
      const exhausted = options.maxAttempts !== undefined && attempt >= options.maxAttempts
      if (exhausted || options.signal?.aborted === true || !transient(error)) throw error
      options.onRetry?.(error, delayMs)
      try {
        await sleep(
          delayMs,
          undefined,
          options.signal === undefined ? {} : { signal: options.signal },
        )
      } catch {
        throw error
      }
      delayMs = Math.min(delayMs * 2, options.maxDelayMs)
    }
  }
}

/**
 * Retry bounds of an idempotent read inside the store: a terminated backend is discovered only
 * when a query uses it, so a read tries again on a fresh pooled connection, briefly.
 */
export const TRANSIENT_READ_RETRY: RetryTransientOptions = { maxDelayMs: 50, maxAttempts: 3 }
