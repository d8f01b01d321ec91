/**
 * In-process registry of callers waiting for attempts to become terminal. The control listener
 * rings it; a bounded wait registers, re-reads the ledger, then awaits the ring or its deadline.
 */
export interface CompletionDoorbell {
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

export function createCompletionDoorbell(): CompletionDoorbell {
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
