import {
  isTerminalView,
  terminalAttemptViewSchema,
  type AnyAttemptView,
  type SettledDetail,
} from '@baton/contracts'
import type { Db, ReadScope } from '@baton/store'
import { readAttemptView as readView } from './attempt-view.ts'

/**
 * The API's bounded wait, in one place: the in-process registry of callers waiting for a bell
 * (attempts to settle, rung by the settlement listener; a session's continuations to become
 * claimable, rung by the same listener), the wait on an existing attempt, and submit-and-wait. A
 * wait reads the ledger at most three times and never polls: the bell or the bound ends it. A bell
 * that carries the terminal view as committed (see `SettledDetail`) spares the last read.
 */
export interface Doorbell<D> {
  /**
   * Register interest in a key; `ring(key)` wakes every waiter for that key (and no other), with
   * the ring's detail when it has one.
   */
  subscribe(key: string): DoorbellSubscription<D>
  ring(key: string, detail?: D): void
  readonly waiting: number
}

/** The doorbell of attempts settling, keyed by attempt id. */
export type SettledDoorbell = Doorbell<SettledDetail>

export interface DoorbellSubscription<D = SettledDetail> {
  /** Resolves `'rang'` on a ring, `'timeout'` after `timeoutMs`, `'aborted'` when `signal` fires. */
  wait(timeoutMs: number, signal?: AbortSignal): Promise<'rang' | 'timeout' | 'aborted'>
  /** The detail of the ring that woke this subscription, if it carried one. */
  readonly detail: D | undefined
  cancel(): void
}

export function createSettledDoorbell(): SettledDoorbell {
  return createDoorbell<SettledDetail>()
}

export function createDoorbell<D>(): Doorbell<D> {
  const waiters = new Map<string, Set<(detail: D | undefined) => void>>()
  let count = 0

  function remove(key: string, wake: (detail: D | undefined) => void): void {
    const set = waiters.get(key)
    if (set?.delete(wake) === true) {
      count -= 1
      if (set.size === 0) waiters.delete(key)
    }
  }

  return {
    get waiting() {
      return count
    },
    ring(key, detail) {
      const set = waiters.get(key)
      if (set === undefined) return
      for (const wake of [...set]) wake(detail)
    },
    subscribe(key) {
      let rang = false
      let onRing: (() => void) | undefined
      // `detail` is a plain field, not a getter: an object literal with a getter gets a hidden
      // class of its own per object, which keeps it, and what its closures reach, alive through
      // every young-generation collection.
      const subscription: {
        -readonly [K in keyof DoorbellSubscription<D>]: DoorbellSubscription<D>[K]
      } = {
        detail: undefined,
        cancel: () => remove(key, wake),
        wait(timeoutMs, signal) {
          if (rang) return Promise.resolve('rang')
          return new Promise((resolve) => {
            const finish = (result: 'rang' | 'timeout' | 'aborted'): void => {
              clearTimeout(timer)
              signal?.removeEventListener('abort', onAbort)
              remove(key, wake)
              resolve(result)
            }
            const onAbort = (): void => finish('aborted')
            const timer = setTimeout(() => finish('timeout'), timeoutMs)
            onRing = () => finish('rang')
            if (signal?.aborted === true) finish('aborted')
            else signal?.addEventListener('abort', onAbort, { once: true })
          })
        },
      }
      const wake = (detail: D | undefined): void => {
        rang = true
        subscription.detail = detail
        remove(key, wake)
        onRing?.()
      }
      let set = waiters.get(key)
      if (set === undefined) {
        set = new Set()
        waiters.set(key, set)
      }
      set.add(wake)
      count += 1
      return subscription
    },
  }
}

/**
 * One bounded wait: read the ledger; if not terminal, subscribe to the doorbell, read again
 * (closing the race with a commit between the two), then await the doorbell or the bound, and
 * read once more. Never a loop: if the bound expires the caller gets the current snapshot.
 * Returns `undefined` when the attempt does not exist.
 */
export async function awaitAttempt(
  deps: { db: Db; doorbell: SettledDoorbell },
  scope: ReadScope,
  attemptId: string,
  timeoutMs: number,
  signal?: AbortSignal,
): Promise<AnyAttemptView | undefined> {
  const first = await readView(deps.db, attemptId, scope)
  if (first === undefined || isTerminalView(first) || timeoutMs <= 0) return first
  const subscription = deps.doorbell.subscribe(attemptId)
  try {
    const second = await readView(deps.db, attemptId, scope)
    if (second === undefined || isTerminalView(second)) return second
    const woken = await subscription.wait(timeoutMs, signal)
    return (
      rungView(woken, subscription, attemptId, scope) ?? (await readView(deps.db, attemptId, scope))
    )
  } finally {
    subscription.cancel()
  }
}

/**
 * Submit-and-wait: subscribe before the attempt can possibly finish (before `enqueue` runs), so
 * no settlement rings unheard and the ledger need not be read first (the attempt was accepted
 * just now); then await the doorbell or the bound, and read the ledger once, unless the bell
 * carried the terminal view.
 */
export async function awaitEnqueued(
  deps: { db: Db; doorbell: SettledDoorbell },
  attemptId: string,
  enqueue: () => Promise<void>,
  timeoutMs: number,
  signal?: AbortSignal,
): Promise<AnyAttemptView | undefined> {
  const subscription = deps.doorbell.subscribe(attemptId)
  try {
    await enqueue()
    const woken = await subscription.wait(timeoutMs, signal)
    // Accepted just now in the caller's namespace: no scope to check.
    return rungView(woken, subscription, attemptId, {}) ?? (await readView(deps.db, attemptId, {}))
  } finally {
    subscription.cancel()
  }
}

/**
 * The terminal view a ring carried, when it woke the wait and is one the caller may see: this
 * attempt's, in `scope`'s namespace, and a well-formed terminal view (a malformed one is not an
 * answer: the ledger is read instead). It was read in the terminal commit's own statement, and a
 * terminal outcome never changes, so it answers as a read after the commit would have. Only the
 * state of a result's delivery moves on after terminal, and a view carried on a bell has none
 * (see `commitTerminalsReturning`).
 */
function rungView(
  woken: 'rang' | 'timeout' | 'aborted',
  subscription: DoorbellSubscription<SettledDetail>,
  attemptId: string,
  scope: ReadScope,
): AnyAttemptView | undefined {
  const detail = subscription.detail
  if (woken !== 'rang' || detail === undefined) return undefined
  if (scope.namespaceId !== undefined && detail.namespaceId !== scope.namespaceId) return undefined
  const view = detail.view
  if (!terminalAttemptViewSchema.safeParse(view).success) return undefined
  // Checked just above; answered as sent, so its fields keep the order every read answers in.
  const terminal = view as AnyAttemptView
  return terminal.attemptId === attemptId ? terminal : undefined
}
