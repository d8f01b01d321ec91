// What `npm run chaos` sends: N delegations of a weighted mix of kinds from many concurrent
// clients, each POSTed with one idempotency key until the API answers.
import { BatonApiError } from '@baton/client'
import { REMEMBERER, turnPrompt } from './history.ts'
import { scheduleFollowUps } from './follow-ups.ts'
import type { ParentRuns } from './parent-runs.ts'
import { GaveUp, retryCall } from './retry.ts'
import {
  POST_TIMEOUT_MS,
  bump,
  rand,
  sessionOf,
  type ChaosRun,
  type Kind,
  type Submitted,
} from './run.ts'
import { WITNESSED, witnessAnswer, witnessToken } from './witness.ts'

const MIX: readonly (readonly [Kind, number])[] = [
  ['instant', 35],
  ['large', 5],
  ['slow', 15],
  ['failing', 10],
  ['hang', 15],
  ['steered', 10],
  ['continued', 8],
  ['witnessed', 2],
]

function pickKind(): Kind {
  let r = Math.random() * 100
  for (const [kind, weight] of MIX) {
    if (r < weight) return kind
    r -= weight
  }
  return 'instant'
}

function delegationFor(kind: Kind, i: number): { name: string; prompt: string; expect?: string } {
  switch (kind) {
    case 'continued':
      return { name: REMEMBERER, prompt: turnPrompt(i, 'a'), expect: turnPrompt(i, 'a') }
    case 'witnessed':
      return { name: WITNESSED, prompt: witnessToken(i), expect: witnessAnswer(witnessToken(i)) }
    case 'instant':
      return { name: 'scripted', prompt: JSON.stringify({ output: `ok-${i}` }), expect: `ok-${i}` }
    case 'large':
      // 1–64 KiB: some inline, most above the 4 KiB inline bound (an artifact). The audit
      // checks every artifact's content against its digest; the preview is not the output.
      return {
        name: 'scripted',
        prompt: JSON.stringify({ output: `large-${i} 😀 `, outputBytes: rand(1024, 65_536) }),
      }
    case 'slow':
      return {
        name: 'scripted',
        prompt: JSON.stringify({ output: `slow-${i}`, delayMs: rand(200, 2000) }),
        expect: `slow-${i}`,
      }
    case 'failing':
      return { name: 'scripted', prompt: JSON.stringify({ fail: 'boom' }) }
    case 'hang':
      return { name: 'scripted', prompt: JSON.stringify({ hang: true }) }
    case 'steered':
      return { name: 'scripted', prompt: JSON.stringify({ awaitSteering: 1 }) }
    default: {
      const never: never = kind
      throw new Error(`unknown kind ${String(never)}`)
    }
  }
}

/** One submitting client: takes the next index until N are taken or submission's deadline fires. */
async function submitter(run: ChaosRun, parents: ParentRuns, next: () => number): Promise<void> {
  const { stats } = run
  for (;;) {
    const i = next()
    if (i >= run.options.count || run.submitDeadline.aborted) return
    const kind = pickKind()
    const { name, prompt, expect } = delegationFor(kind, i)
    try {
      const parentRunId = await parents.parentFor(i, kind)
      // One key per logical delegation: a retry after a lost answer (connection cut by an API
      // restart, timeout) gets the first attempt back instead of creating a second delegation.
      const answer = await retryCall(
        () =>
          run.client.delegate(
            {
              sessionId: sessionOf(i),
              name,
              prompt,
              ...(parentRunId === undefined ? {} : { parentRunId }),
            },
            { idempotencyKey: `${run.prefix}-${i}`, timeoutMs: POST_TIMEOUT_MS },
          ),
        {
          signal: run.submitDeadline,
          maxDelayMs: 250,
          onRetry: (error) => {
            if (error instanceof BatonApiError) bump(stats.postRetryStatus, error.status)
            else stats.postConnectionErrors += 1
          },
        },
      )
      const sub: Submitted = { i, kind, agentId: answer.agentId, expect, at: Date.now() }
      run.submitted.set(answer.attemptId, sub)
      scheduleFollowUps(run, answer.attemptId, sub)
    } catch (error) {
      if (error instanceof GaveUp) return
      if (!(error instanceof BatonApiError)) throw error
      // A 4xx is a contract problem, not a fault: count it and move on.
      if (!stats.postRejected.has(error.status))
        run.log(`chaos: delegation rejected ${error.status}: ${error.body.slice(0, 300)}`)
      bump(stats.postRejected, error.status)
    }
  }
}

/** Runs `--clients` submitters until N delegations were accepted or the deadline fired. */
export async function submitWorkload(run: ChaosRun, parents: ParentRuns): Promise<void> {
  let nextIndex = 0
  await Promise.all(
    Array.from({ length: run.options.clients }, () => submitter(run, parents, () => nextIndex++)),
  )
}
