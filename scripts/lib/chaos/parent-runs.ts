// The continuation phase of `npm run chaos`: one delegation in four (of the kinds below) names a
// parent run of its session — one user run per session, created on first use — so results land
// while their parent is active (held) and, once the parents are completed after quiescence, as
// admitted continuations, all under the same faults. A host then claims and completes every
// continuation of those sessions; the audit (`auditContinuations`) checks that each result with an
// ended parent has exactly one continuation or a recorded suppression.
import { GaveUp, retryCall } from './retry.ts'
import { POST_TIMEOUT_MS, sessionOf, type ChaosRun, type Kind } from './run.ts'

/** Kinds whose delegations may name a parent run (agent continuations and witnesses do not). */
const PARENTED: ReadonlySet<Kind> = new Set(['instant', 'slow', 'failing', 'hang', 'steered'])

export interface ParentRuns {
  /** The parent run for delegation `i` of `kind`, or `undefined` when it names none. */
  parentFor(i: number, kind: Kind): Promise<string | undefined>
  /** Completes every parent run, then claims and completes each continuation of their sessions. */
  finish(): Promise<{ readonly parents: number; readonly consumed: number }>
}

export function createParentRuns(run: ChaosRun): ParentRuns {
  const parents = new Map<string, Promise<string | undefined>>()
  const call = <T>(fn: () => Promise<T>, signal: AbortSignal) =>
    retryCall(fn, { signal, maxDelayMs: 250 })

  function parentOf(sessionId: string): Promise<string | undefined> {
    let parent = parents.get(sessionId)
    if (parent === undefined) {
      parent = call(
        () => run.client.createRun(sessionId, {}, { timeoutMs: POST_TIMEOUT_MS }),
        run.submitDeadline,
      ).then(
        (created) => created.runId,
        (error: unknown) => {
          // Delegate without a parent rather than not at all; the next one tries again.
          parents.delete(sessionId)
          if (error instanceof GaveUp) return undefined
          throw error
        },
      )
      parents.set(sessionId, parent)
    }
    return parent
  }

  return {
    parentFor: (i, kind) =>
      PARENTED.has(kind) && i % 4 === 0 ? parentOf(sessionOf(i)) : Promise.resolve(undefined),
    async finish() {
      const signal = AbortSignal.timeout(120_000)
      const sessions = [...parents.keys()]
      const runIds = (await Promise.all(parents.values())).filter((id) => id !== undefined)
      for (const runId of runIds)
        await call(() => run.client.completeRun(runId, {}, { timeoutMs: POST_TIMEOUT_MS }), signal)
      let consumed = 0
      for (const sessionId of sessions) {
        for (;;) {
          const claim = await call(
            () => run.client.claimContinuation(sessionId, { timeoutMs: 0, leaseMs: 60_000 }),
            signal,
          )
          if (claim === undefined) break
          await call(() => run.client.completeContinuation(claim.runId, claim.claim), signal)
          consumed += 1
        }
      }
      return { parents: runIds.length, consumed }
    },
  }
}
