import { setTimeout as sleep } from 'node:timers/promises'

/** SQLSTATE knowledge lives here and nowhere else. */
export const SqlState = {
  UniqueViolation: '23505',
  ForeignKeyViolation: '23503',
  SerializationFailure: '40001',
  DeadlockDetected: '40P01',
  AdminShutdown: '57P01',
  CannotConnectNow: '57P03',
} as const

interface PgErrorLike {
  readonly code?: unknown
  readonly constraint?: unknown
}

function asPgError(error: unknown): PgErrorLike | undefined {
  return typeof error === 'object' && error !== null ? error : undefined
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

/**
 * Whether a failed store call may succeed if simply tried again: connection loss, a terminated
 * backend, a server restarting, serialization conflicts. Everything else is a defect or bad input.
 */
export function isTransientStoreError(error: unknown): boolean {
  const e = asPgError(error)
  if (e === undefined) return false
  const code = typeof e.code === 'string' ? e.code : ''
  if (code.startsWith('08')) return true // connection exceptions
  if (
    code === SqlState.SerializationFailure ||
    code === SqlState.DeadlockDetected ||
    code === SqlState.AdminShutdown ||
    code === SqlState.CannotConnectNow
  ) {
    return true
  }
  return (
    ['ECONNRESET', 'ECONNREFUSED', 'EPIPE', 'ETIMEDOUT'].includes(code) ||
    (error instanceof Error &&
      /Connection terminated|connection timeout|Client has encountered a connection error/i.test(
        error.message,
      ))
  )
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
