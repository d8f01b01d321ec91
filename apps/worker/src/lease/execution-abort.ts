import { FailureCategory } from '@baton/contracts'

/** Why the worker aborted an execution. */
export type AbortCause = 'cancelled' | 'lease_lost' | 'shutdown'

/** The durable category of each cause, decided once, where the abort reason is made. */
const CATEGORY_OF_CAUSE: { readonly [C in AbortCause]: FailureCategory } = {
  cancelled: FailureCategory.Cancelled,
  // The worker writes nothing after a lost lease; the reconciler records this same category.
  lease_lost: FailureCategory.ProcessLost,
  shutdown: FailureCategory.Shutdown,
}

/**
 * The reason an execution's AbortController is aborted with: it carries its durable category, so
 * the terminal result reads the category from the reason instead of re-deriving it elsewhere.
 */
export class ExecutionAbort extends Error {
  readonly abortCause: AbortCause
  readonly failureCategory: FailureCategory
  constructor(cause: AbortCause) {
    super(`execution aborted: ${cause}`)
    this.name = 'ExecutionAbort'
    this.abortCause = cause
    this.failureCategory = CATEGORY_OF_CAUSE[cause]
  }
}

/**
 * One reason per cause, made once: a reason carries nothing of the execution it stops, and a burst
 * of cancels aborts thousands of children in one pass, which would otherwise capture a stack trace
 * for each.
 */
const ABORT_OF_CAUSE: { readonly [C in AbortCause]: ExecutionAbort } = {
  cancelled: new ExecutionAbort('cancelled'),
  lease_lost: new ExecutionAbort('lease_lost'),
  shutdown: new ExecutionAbort('shutdown'),
}

/** The reason an execution is aborted with for `cause`. */
export function executionAbort(cause: AbortCause): ExecutionAbort {
  return ABORT_OF_CAUSE[cause]
}

/**
 * The reason an execution's signal was aborted with, or undefined while it is not aborted. A signal
 * aborted with any other reason (a library's own abort) counts as a cancel.
 */
export function executionAbortOf(signal: AbortSignal): ExecutionAbort | undefined {
  if (!signal.aborted) return undefined
  return signal.reason instanceof ExecutionAbort ? signal.reason : ABORT_OF_CAUSE.cancelled
}
