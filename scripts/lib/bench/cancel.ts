// The bench's cancellation figures: how long from a cancel request to the answer of a `wait` that
// was already pending on the attempt, for running children (the scripted child told to hang, which
// ends only when its AbortSignal fires).
import { setTimeout as sleep } from 'node:timers/promises'
import type { BatonClient } from '@baton/client'
import { isTerminalView, type AnyAttemptView } from '@baton/contracts'

const HANG_PROMPT = '{"hang":true}'
/** Long enough for a wait request to reach the API before the cancel that it must observe. */
const WAIT_HEAD_START_MS = 20

async function startRunning(client: BatonClient, n: number, accepted: string[]): Promise<string[]> {
  const ids = await Promise.all(
    Array.from({ length: n }, async (_, i) => {
      const answer = await client.delegate(
        { sessionId: `bench-cancel-${i % 100}`, name: 'scripted', prompt: HANG_PROMPT },
        { timeoutMs: 15_000 },
      )
      accepted.push(answer.attemptId)
      return answer.attemptId
    }),
  )
  let waiting = ids
  const deadline = Date.now() + 60_000
  while (waiting.length > 0) {
    if (Date.now() > deadline) throw new Error(`${waiting.length} hanging children never ran`)
    const views = await Promise.all(waiting.map((id) => client.getAttempt(id)))
    waiting = waiting.filter((_, i) => views[i]?.status !== 'running')
    if (waiting.length > 0) await sleep(100)
  }
  return ids
}

export interface CancelFigures {
  /** Milliseconds from each cancel request to its pending wait's answer, ascending. */
  readonly latencies: number[]
  /** Waits that answered with anything but a terminal `aborted` attempt. */
  readonly notAborted: number
}

/**
 * Starts `n` hanging children, waits until every one runs, then cancels them: one after another
 * when `burst` is false, all at once when it is true.
 */
export async function measureCancels(
  client: BatonClient,
  n: number,
  burst: boolean,
  accepted: string[],
): Promise<CancelFigures> {
  const ids = await startRunning(client, n, accepted)
  const latencies: number[] = []
  let notAborted = 0
  const cancelOne = async (id: string, pending: Promise<AnyAttemptView>): Promise<void> => {
    const sent = performance.now()
    await client.cancel(id, 'bench', { timeoutMs: 15_000 })
    const view = await pending
    latencies.push(performance.now() - sent)
    if (!isTerminalView(view) || view.stopReason !== 'aborted') notAborted += 1
  }
  const pendingWait = (id: string): Promise<AnyAttemptView> => {
    const answer = client.wait(id, 10_000, { timeoutMs: 15_000 })
    // Awaited later by cancelOne, which sees a failure; until then it must not count as unhandled.
    answer.catch(() => undefined)
    return answer
  }
  if (burst) {
    const waits = ids.map(pendingWait)
    await sleep(WAIT_HEAD_START_MS * 10)
    await Promise.all(ids.map((id, i) => cancelOne(id, waits[i]!)))
  } else {
    for (const id of ids) {
      const wait = pendingWait(id)
      await sleep(WAIT_HEAD_START_MS)
      await cancelOne(id, wait)
    }
  }
  return { latencies: latencies.sort((a, b) => a - b), notAborted }
}
