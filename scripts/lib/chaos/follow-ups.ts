// What `npm run chaos` does after a delegation was accepted: cancel the hanging ones, steer the
// steered ones (cancel as the backstop), and continue the `continued` ones once their first turn
// is terminal. Every call retries transient failures until the follow-up deadline.
import { setTimeout as sleep } from 'node:timers/promises'
import { BatonApiError } from '@baton/client'
import { REMEMBERER, turnPrompt } from './history.ts'
import { GaveUp, retryCall } from './retry.ts'
import {
  POST_TIMEOUT_MS,
  bump,
  rand,
  sessionOf,
  track,
  type ChaosRun,
  type Submitted,
} from './run.ts'

/** A steered child that never got its message would hang: it is cancelled this long after submit. */
export const STEER_BACKSTOP_MS = 5_000
/** The bound of one `GET …/wait` (an API restart waits for the waits in flight). */
const WAIT_BOUND_MS = 2_000

/** Counts a follow-up's retried failure: an answer by its status, no answer as a connection error. */
function countRetry(run: ChaosRun, counter: Map<string, number>, prefix: string) {
  return (error: unknown): void => {
    if (error instanceof BatonApiError) bump(counter, `${prefix}retry-${error.status}`)
    else run.stats.followUpErrors += 1
  }
}

/** Cancels until the API answers 202, 409 (already terminal) or 404; answers the outcome. */
export async function cancelUntilAnswered(
  run: ChaosRun,
  attemptId: string,
  why: string,
): Promise<string> {
  const { stats } = run
  try {
    const { outcome } = await retryCall(
      () => run.client.cancel(attemptId, `chaos ${why}`, { timeoutMs: POST_TIMEOUT_MS }),
      {
        signal: run.followUpDeadline,
        maxDelayMs: 300,
        onRetry: countRetry(run, stats.cancel, `${why}:`),
      },
    )
    bump(stats.cancel, `${why}:${outcome}`)
    return outcome
  } catch (error) {
    if (error instanceof GaveUp) {
      stats.followUpGaveUp += 1
      return 'gave-up'
    }
    if (!(error instanceof BatonApiError)) throw error
    bump(stats.cancel, `${why}:${error.status}`)
    return String(error.status)
  }
}

async function steer(run: ChaosRun, attemptId: string, sub: Submitted): Promise<void> {
  const { stats } = run
  const stopAt = AbortSignal.any([
    run.followUpDeadline,
    AbortSignal.timeout(Math.max(0, sub.at + STEER_BACKSTOP_MS - Date.now())),
  ])
  try {
    await retryCall(
      () => run.client.steer(attemptId, `steer-${sub.i}`, { timeoutMs: POST_TIMEOUT_MS }),
      {
        signal: stopAt,
        maxDelayMs: 300,
        onRetry: countRetry(run, stats.steer, ''),
      },
    )
    sub.steered = true
    bump(stats.steer, '202')
  } catch (error) {
    if (error instanceof GaveUp) bump(stats.steer, 'gave-up')
    else if (error instanceof BatonApiError) bump(stats.steer, String(error.status))
    else throw error
  }
}

/**
 * Bounded waits (`GET …/wait`, each at most WAIT_BOUND_MS) until the attempt is terminal; answers
 * its stop reason, or undefined once the follow-up deadline fired.
 */
async function waitUntilTerminal(run: ChaosRun, attemptId: string): Promise<string | undefined> {
  const { stats } = run
  try {
    for (;;) {
      const view = await retryCall(
        () => run.client.wait(attemptId, WAIT_BOUND_MS, { timeoutMs: WAIT_BOUND_MS + 15_000 }),
        {
          signal: run.followUpDeadline,
          maxDelayMs: 300,
          // An answer that is not a view (404 while an API restarts…) is waited out as well.
          transient: () => true,
          onRetry: countRetry(run, stats.continuation, 'wait-'),
        },
      )
      if (view.status === 'terminal' && 'stopReason' in view) return view.stopReason
      // A snapshot (the bound expired) waits again at once.
      if (run.followUpDeadline.aborted) throw new GaveUp('still running')
    }
  } catch (error) {
    if (!(error instanceof GaveUp)) throw error
    stats.followUpGaveUp += 1
    return undefined
  }
}

/**
 * Continues the agent of a `continued` delegation once its first turn is terminal, whatever that
 * turn's outcome: a first turn that appended nothing (lost with its worker, failed) leaves the
 * history empty, and the continuation then sees only its own prompt. POSTed like a first
 * delegation, with one idempotency key per continuation.
 */
async function continueAgent(run: ChaosRun, firstAttemptId: string, sub: Submitted): Promise<void> {
  const { stats } = run
  const firstStop = await waitUntilTerminal(run, firstAttemptId)
  if (firstStop === undefined) return
  bump(stats.continuation, `first ${firstStop}`)
  try {
    const answer = await retryCall(
      () =>
        run.client.delegate(
          {
            sessionId: sessionOf(sub.i),
            name: REMEMBERER,
            agentId: sub.agentId,
            prompt: turnPrompt(sub.i, 'b'),
          },
          { idempotencyKey: `${run.prefix}-${sub.i}-b`, timeoutMs: POST_TIMEOUT_MS },
        ),
      {
        signal: run.followUpDeadline,
        maxDelayMs: 250,
        onRetry: countRetry(run, stats.continuation, ''),
      },
    )
    run.continuations.set(answer.attemptId, {
      i: sub.i,
      firstAttemptId,
      attemptId: answer.attemptId,
    })
    bump(stats.continuation, '202')
  } catch (error) {
    if (error instanceof GaveUp) {
      stats.followUpGaveUp += 1
      return
    }
    if (!(error instanceof BatonApiError)) throw error
    if (!stats.continuation.has(`rejected-${error.status}`))
      run.log(`chaos: continuation rejected ${error.status}: ${error.body.slice(0, 300)}`)
    bump(stats.continuation, `rejected-${error.status}`)
  }
}

export function scheduleFollowUps(run: ChaosRun, attemptId: string, sub: Submitted): void {
  if (sub.kind === 'hang') {
    track(
      run,
      (async () => {
        await sleep(rand(100, 1500))
        sub.cancel = await cancelUntilAnswered(run, attemptId, 'hang')
      })(),
    )
  } else if (sub.kind === 'steered') {
    track(
      run,
      (async () => {
        await sleep(rand(100, 1500))
        await steer(run, attemptId, sub)
        // Cancellation is the backstop: a steered child that never got its message would hang.
        await sleep(Math.max(0, sub.at + STEER_BACKSTOP_MS - Date.now()))
        sub.cancel = await cancelUntilAnswered(run, attemptId, 'steer-backstop')
      })(),
    )
  } else if (sub.kind === 'continued') {
    track(run, continueAgent(run, attemptId, sub))
  }
}
