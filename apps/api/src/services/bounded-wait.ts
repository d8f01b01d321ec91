import { isTerminalView, type AnyAttemptView } from '@baton/contracts'
import type { Db, ReadScope } from '@baton/store'
import { readAttemptView as readView } from './attempt-view.ts'

/**
 * The API's bounded wait, in one place: the in-process registry of callers waiting for attempts
 * to settle (rung by the settlement listener), the wait on an existing attempt, and submit-and-
 * wait. A wait reads the ledger at most three times and never polls: the bell or the bound ends it.
 */
export interface SettledDoorbell {
  /** Register interest; call `ring(id)` to wake every waiter for that attempt. */
  subscribe(attemptId: string): DoorbellSubscription
  ring(attemptId: string): void
  readonly waiting: number
}

export interface DoorbellSubscription {
  /** Resolves `'rang'` on a ring, `'timeout'` after `timeoutMs`, `'aborted'` when `signal` fires. */
  wait(timeoutMs: number, signal?: AbortSignal): Promise<'rang' | 'timeout' | 'aborted'>
  cancel(): void
}

export function createSettledDoorbell(): SettledDoorbell {
  const waiters = new Map<string, Set<() => void>>()
  let count = 0

  function remove(attemptId: string, wake: () => void): void {
    const set = waiters.get(attemptId)
    if (set?.delete(wake) === true) {
      count -= 1
      if (set.size === 0) waiters.delete(attemptId)
    }
  }

  return {
    get waiting() {
      return count
    },
    ring(attemptId) {
      const set = waiters.get(attemptId)
      if (set === undefined) return
      for (const wake of [...set]) wake()
    },
    subscribe(attemptId) {
      let rang = false
      let onRing: (() => void) | undefined
      const wake = (): void => {
        rang = true
        remove(attemptId, wake)
        onRing?.()
      }
      let set = waiters.get(attemptId)
      if (set === undefined) {
        set = new Set()
        waiters.set(attemptId, set)
      }
      set.add(wake)
      count += 1
      return {
        cancel: () => remove(attemptId, wake),
        wait(timeoutMs, signal) {
          if (rang) return Promise.resolve('rang')
          return new Promise((resolve) => {
            const finish = (result: 'rang' | 'timeout' | 'aborted'): void => {
              clearTimeout(timer)
              signal?.removeEventListener('abort', onAbort)
              remove(attemptId, wake)
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
    await subscription.wait(timeoutMs, signal)
    return await readView(deps.db, attemptId, scope)
  } finally {
    subscription.cancel()
  }
}

/**
 * Submit-and-wait: subscribe before the attempt can possibly finish (before `enqueue` runs), so
 * no settlement rings unheard and the ledger need not be read first (the attempt was accepted
 * just now); then await the doorbell or the bound, and read the ledger once.
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
    await subscription.wait(timeoutMs, signal)
    // Accepted just now in the caller's namespace: no scope to check.
    return await readView(deps.db, attemptId, {})
  } finally {
    subscription.cancel()
  }
}
