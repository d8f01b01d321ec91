import { isTerminalView, type AnyAttemptView } from '@baton/contracts'
import type { CompletionDoorbell, DoorbellSubscription } from '@baton/queue'
import { getAttempt, type Db } from '@baton/store'

/**
 * One bounded wait: read the ledger; if not terminal, subscribe to the completion doorbell, read
 * again (closing the race with a commit between the two), then await the doorbell or the bound,
 * and read once more. Never a loop: if the bound expires the caller gets the current snapshot.
 * Returns `undefined` when the attempt does not exist.
 */
export async function awaitAttempt(
  deps: { db: Db; doorbell: CompletionDoorbell },
  attemptId: string,
  timeoutMs: number,
  signal?: AbortSignal,
): Promise<AnyAttemptView | undefined> {
  const first = await getAttempt(deps.db, attemptId)
  if (first === undefined || isTerminalView(first) || timeoutMs <= 0) return first
  const subscription = deps.doorbell.subscribe(attemptId)
  try {
    const second = await getAttempt(deps.db, attemptId)
    if (second === undefined || isTerminalView(second)) return second
    await subscription.wait(timeoutMs, signal)
    return await getAttempt(deps.db, attemptId)
  } finally {
    subscription.cancel()
  }
}

/**
 * The bounded wait of a caller that subscribed before the attempt could possibly finish (submit-
 * and-wait): await the doorbell or the bound, then read the ledger once.
 */
export async function awaitSubscribed(
  deps: { db: Db },
  attemptId: string,
  subscription: DoorbellSubscription,
  timeoutMs: number,
  signal?: AbortSignal,
): Promise<AnyAttemptView | undefined> {
  try {
    await subscription.wait(timeoutMs, signal)
    return await getAttempt(deps.db, attemptId)
  } finally {
    subscription.cancel()
  }
}
