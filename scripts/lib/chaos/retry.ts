// The one retry policy of `npm run chaos`: every call the script makes while faults fire (HTTP to
// an API that restarts, SQL to a Postgres whose backends are terminated) goes through it.
import { setTimeout as sleep } from 'node:timers/promises'
import { BatonApiError } from '@baton/client'

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
  readonly minDelayMs?: number
  /** The pause between tries is random in `[minDelayMs, maxDelayMs]`, so clients spread out. */
  readonly maxDelayMs: number
  /** Which failures are retried; `isTransient` unless given. */
  readonly transient?: (error: unknown) => boolean
  /** Called with each failure that is retried (statistics). */
  readonly onRetry?: (error: unknown) => void
}

/**
 * Calls `fn` until it succeeds. A failure that is not transient is thrown at once. The signal only
 * stops further tries; a call in flight is left to its own timeout, because abandoning a request
 * the API may already have accepted would make its answer unknowable.
 */
export async function retryTransient<T>(fn: () => Promise<T>, options: RetryOptions): Promise<T> {
  const transient = options.transient ?? isTransient
  const minDelayMs = options.minDelayMs ?? 50
  for (;;) {
    try {
      return await fn()
    } catch (error) {
      if (!transient(error)) throw error
      if (options.signal?.aborted === true) throw new GaveUp(error)
      options.onRetry?.(error)
      await sleep(minDelayMs + Math.floor(Math.random() * (options.maxDelayMs - minDelayMs + 1)))
    }
  }
}
