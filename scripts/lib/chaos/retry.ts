// The one retry policy of `npm run chaos`: every call the script makes while faults fire (HTTP to
// an API that restarts, SQL to a Postgres whose backends are terminated) goes through it.
import { BatonApiError } from '@baton/client'
import { retryTransient } from '@baton/store'

/**
 * Whether a failure may pass if the call is repeated: no answer at all (connection refused or
 * cut, timeout), or an answer that says "not now" (5xx, 429). Any other answer is the API's
 * decision and repeating the call changes nothing.
 */
export function isTransient(error: unknown): boolean {
  if (error instanceof BatonApiError) return error.status >= 500 || error.status === 429
  return true
}

/** Thrown by `retryTransient` when its signal fired while the call was still failing. */
export class GaveUp extends Error {
  readonly last: unknown
  constructor(last: unknown) {
    super(`gave up: ${String(last)}`)
    this.name = 'GaveUp'
    this.last = last
  }
}

export interface RetryOptions {
  /** Once it has fired, a transient failure is no longer retried: `GaveUp` is thrown. */
  readonly signal?: AbortSignal
  /** Ceiling of the pause between tries (Baton's one policy: it doubles from 50 ms up to this). */
  readonly maxDelayMs: number
  /** Which failures are retried; `isTransient` unless given. */
  readonly transient?: (error: unknown) => boolean
  /** Called with each failure that is retried (statistics). */
  readonly onRetry?: (error: unknown) => void
}

/**
 * Calls `fn` until it succeeds, through Baton's one retry policy (`retryTransient` of the store)
 * with the script's notion of transient. A failure that is not transient is thrown at once. The
 * signal only stops further tries (`GaveUp`); a call in flight is left to its own timeout, because
 * abandoning a request the API may already have accepted would make its answer unknowable.
 */
export async function retryCall<T>(fn: () => Promise<T>, options: RetryOptions): Promise<T> {
  const transient = options.transient ?? isTransient
  try {
    return await retryTransient(fn, {
      maxDelayMs: options.maxDelayMs,
      transient,
      ...(options.signal === undefined ? {} : { signal: options.signal }),
      ...(options.onRetry === undefined ? {} : { onRetry: options.onRetry }),
    })
  } catch (error) {
    if (options.signal?.aborted === true && transient(error)) throw new GaveUp(error)
    throw error
  }
}
