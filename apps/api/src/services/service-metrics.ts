import { FailureCategory, isTerminalView, type AnyAttemptView } from '@baton/contracts'
import type { ApiMetrics } from '@baton/observability'
import {
  movedDeliveries,
  type AcceptDelegationOutcome,
  type EndRunOutcome,
  type RequestCancelOutcome,
} from '@baton/store'

/**
 * What the command services' ledger answers mean for the API's metrics, in one place. Each is
 * called once per batch or request with answers already in hand: memory only, no round trip.
 */

/** One accept statement: the delegations it accepted (replays and refusals are not counted). */
export function countAccepted(
  metrics: ApiMetrics | undefined,
  outcomes: readonly AcceptDelegationOutcome[],
): void {
  metrics?.attemptsAccepted.inc(outcomes.filter((o) => o.kind === 'accepted').length)
}

/** One cancel statement: the queued attempts it made terminal (`aborted` / `cancelled`). */
export function countQueuedCancels(
  metrics: ApiMetrics | undefined,
  outcomes: readonly RequestCancelOutcome[],
): void {
  const made = outcomes.filter((o) => o.kind === 'cancelled_queued').length
  if (made > 0)
    metrics?.attemptsTerminal.inc(
      { stop_reason: 'aborted', failure_category: FailureCategory.Cancelled },
      made,
    )
}

/** A run's end: the deliveries its reconciliation moved, by action. */
export function countDeliveries(metrics: ApiMetrics | undefined, outcome: EndRunOutcome): void {
  if (metrics === undefined || outcome.kind !== 'ended') return
  for (const { action } of movedDeliveries(outcome.deliveries))
    metrics.continuationDeliveries.inc({ action })
}

/** Starts timing a submit-and-wait; the returned function records it with the answer it gave. */
export function timeSubmitWait(
  metrics: ApiMetrics | undefined,
): (view: AnyAttemptView | undefined) => void {
  const end = metrics?.submitWaitSeconds.startTimer()
  return (view) =>
    end?.({ result: view !== undefined && isTerminalView(view) ? 'terminal' : 'snapshot' })
}
