// The continuation phase of `npm run chaos`: one delegation in four (of the kinds below) names a
// parent run of its session — one user run per session, created on first use — so results land
// while their parent is active (held) and, once the parents are completed after quiescence, as
// admitted continuations, all under the same faults. The parents' host keeps their leases alive
// (a parent whose lease lapses anyway is abandoned, which releases what it held as a completion
// does). A host then claims, verifies (`verifyDelivery`) and completes every continuation of those
// sessions; the audit (`auditContinuations`) checks that each result with an ended parent has
// exactly one continuation or a recorded suppression, and every delivery its receipt.
import { BatonApiError, verifyDelivery } from '@baton/client'
import { ContinuationLimits, ErrorCode } from '@baton/contracts'
import { GaveUp, retryCall } from './retry.ts'
import { POST_TIMEOUT_MS, sessionOf, type ChaosRun, type Kind } from './run.ts'

/** Kinds whose delegations may name a parent run (agent continuations and witnesses do not). */
const PARENTED: ReadonlySet<Kind> = new Set(['instant', 'slow', 'failing', 'hang', 'steered'])

export interface ParentRuns {
  /** The parent run for delegation `i` of `kind`, or `undefined` when it names none. */
  parentFor(i: number, kind: Kind): Promise<string | undefined>
  /**
   * Completes every parent run, then claims, verifies and completes each continuation of their
   * sessions. A delivery whose receipt does not bind it is thrown (`DeliveryVerificationError`).
   */
  finish(): Promise<{ readonly parents: number; readonly consumed: number }>
}

/** How often the parents' host renews their leases (well within one lease). */
const PARENT_HEARTBEAT_MS = 60_000

/** `pushed`: sessions whose continuations go to their webhook, which the host leaves alone. */
export function createParentRuns(
  run: ChaosRun,
  pushed: (sessionId: string) => boolean = () => false,
): ParentRuns {
  const parents = new Map<string, Promise<string | undefined>>()
  const call = <T>(fn: () => Promise<T>, signal: AbortSignal) =>
    retryCall(fn, { signal, maxDelayMs: 250 })

  function parentOf(sessionId: string): Promise<string | undefined> {
    let parent = parents.get(sessionId)
    if (parent === undefined) {
      parent = call(
        () =>
          run.client.createRun(
            sessionId,
            { leaseMs: ContinuationLimits.leaseMsMax },
            { timeoutMs: POST_TIMEOUT_MS },
          ),
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

  // A heartbeat that fails (a fault, an API restarting) is tried again at the next beat.
  const heartbeat = setInterval(() => {
    for (const parent of parents.values()) {
      void parent
        .then((runId) =>
          runId === undefined
            ? undefined
            : run.client.heartbeatRun(runId, ContinuationLimits.leaseMsMax, {
                timeoutMs: POST_TIMEOUT_MS,
              }),
        )
        .catch(() => undefined)
    }
  }, PARENT_HEARTBEAT_MS)
  // The beat alone never keeps the script alive (a run that fails before `finish` still exits).
  heartbeat.unref()

  return {
    parentFor: (i, kind) =>
      PARENTED.has(kind) && i % 4 === 0 ? parentOf(sessionOf(i)) : Promise.resolve(undefined),
    async finish() {
      clearInterval(heartbeat)
      const signal = AbortSignal.timeout(120_000)
      const sessions = [...parents.keys()]
      const runIds = (await Promise.all(parents.values())).filter((id) => id !== undefined)
      for (const runId of runIds)
        await call(
          () => run.client.completeRun(runId, {}, { timeoutMs: POST_TIMEOUT_MS }),
          signal,
        ).catch((error: unknown) => {
          // Abandoned (its lease lapsed): what it held was released as a completion releases it.
          if (!(error instanceof BatonApiError && error.code === ErrorCode.RunNotActive))
            throw error
        })
      let consumed = 0
      for (const sessionId of sessions.filter((s) => !pushed(s))) {
        for (;;) {
          const claim = await call(
            () => run.client.claimContinuation(sessionId, { timeoutMs: 0, leaseMs: 60_000 }),
            signal,
          )
          if (claim === undefined) break
          verifyDelivery(claim)
          await call(() => run.client.completeContinuation(claim.runId, claim.claim), signal)
          consumed += 1
        }
      }
      return { parents: runIds.length, consumed }
    },
  }
}
