// Baton's cancellation latency: from a cancel request to the answer of a `wait` that was already
// pending on the attempt, for running children (the scripted child told to hang, which ends only
// when its AbortSignal fires).
import { setTimeout as sleep } from 'node:timers/promises'
import type { BatonClient } from '@baton/client'
import { isTerminalView } from '@baton/contracts'

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

/**
 * Starts `n` hanging children, waits until every one runs, then cancels them one after another:
 * the milliseconds from each cancel request to its pending wait's answer, ascending. A wait that
 * answers anything but a terminal `aborted` attempt fails the run.
 */
export async function measureCancels(
  client: BatonClient,
  n: number,
  accepted: string[],
): Promise<number[]> {
  const latencies: number[] = []
  for (const id of await startRunning(client, n, accepted)) {
    const pending = client.wait(id, 10_000, { timeoutMs: 15_000 })
    // Awaited below, after the cancel; until then a failure must not count as unhandled.
    pending.catch(() => undefined)
    await sleep(WAIT_HEAD_START_MS)
    const sent = performance.now()
    await client.cancel(id, 'bench', { timeoutMs: 15_000 })
    const view = await pending
    latencies.push(performance.now() - sent)
    if (!isTerminalView(view) || view.stopReason !== 'aborted')
      throw new Error(`a cancelled child answered ${view.status}, not aborted`)
  }
  return latencies.sort((a, b) => a - b)
}
