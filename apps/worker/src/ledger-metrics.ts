import { FailureCategory } from '@baton/contracts'
import { NO_FAILURE_CATEGORY, type WorkerMetrics } from '@baton/observability'
import type {
  ClaimAttemptOutcome,
  CommitTerminalInput,
  CommitTerminalOutcome,
  DeliveryAction,
} from '@baton/store'

/**
 * What the worker's ledger answers mean for its metrics, in one place. Called once per batched
 * statement with that statement's inputs and outcomes: memory only, never a round trip.
 */

/** When this worker took an execution and when it aborted it for a cancel (monotonic ms). */
export interface ExecutionTiming {
  readonly heldAt: number
  readonly cancelledAt: number | undefined
}

/** One claim statement: its size, and each claimed attempt's time in the queue. */
export function observeClaims(
  metrics: WorkerMetrics,
  outcomes: readonly ClaimAttemptOutcome[],
): void {
  metrics.ledgerBatchItems.observe({ statement: 'claim' }, outcomes.length)
  for (const outcome of outcomes) {
    if (outcome.kind === 'claimed')
      metrics.attemptQueuedSeconds.observe(Math.max(0, outcome.attempt.queuedMs) / 1000)
  }
}

/**
 * One terminal commit statement: its size; per attempt it made terminal (`committed`, or
 * `replayed` — the retry of a commit whose answer was lost, never counted before), the terminal by
 * stop reason and category, claim → terminal, and cancel → aborted. A result that needed an
 * artifact and went over quota is counted as the result the worker committed, not as the
 * `quota_exceeded` error the ledger stored instead.
 */
export function observeCommits(
  metrics: WorkerMetrics,
  inputs: readonly CommitTerminalInput[],
  outcomes: readonly CommitTerminalOutcome[],
  timingOf: (attemptId: string) => ExecutionTiming | undefined,
): void {
  metrics.ledgerBatchItems.observe({ statement: 'commit' }, inputs.length)
  const now = performance.now()
  const terminals = new Map<string, { stop_reason: string; failure_category: string; n: number }>()
  inputs.forEach((input, i) => {
    const outcome = outcomes[i]
    if (outcome !== 'committed' && outcome !== 'replayed') return
    const { stopReason, failureCategory } = input.result
    const category = failureCategory ?? NO_FAILURE_CATEGORY
    const key = `${stopReason}/${category}`
    const entry = terminals.get(key)
    if (entry === undefined)
      terminals.set(key, { stop_reason: stopReason, failure_category: category, n: 1 })
    else entry.n += 1
    const timing = timingOf(input.attemptId)
    if (timing === undefined) return
    metrics.attemptRunSeconds.observe((now - timing.heldAt) / 1000)
    if (
      stopReason === 'aborted' &&
      failureCategory === FailureCategory.Cancelled &&
      timing.cancelledAt !== undefined
    )
      metrics.cancelToAbortedSeconds.observe((now - timing.cancelledAt) / 1000)
  })
  for (const { n, ...labels } of terminals.values()) metrics.attemptsTerminal.inc(labels, n)
}

/** Process-loss terminals this worker synthesised (reconciler, or a claim that found an orphan). */
export function countProcessLoss(metrics: WorkerMetrics | undefined, made: number): void {
  metrics?.attemptsTerminal.inc(
    { stop_reason: 'error', failure_category: FailureCategory.ProcessLost },
    made,
  )
}

/** One reconcile pass: what it did, by action, and the deliveries it moved. */
export function observeReconcilePass(
  metrics: WorkerMetrics | undefined,
  pass: {
    readonly processLost: number
    readonly requeued: number
    readonly expired: number
    readonly removed: number
    readonly moved: readonly { readonly action: DeliveryAction }[]
  },
): void {
  if (metrics === undefined) return
  countProcessLoss(metrics, pass.processLost)
  metrics.reconcilerActions.inc({ action: 'process_loss' }, pass.processLost)
  metrics.reconcilerActions.inc({ action: 'requeue' }, pass.requeued)
  metrics.reconcilerActions.inc({ action: 'artifact_expiry' }, pass.expired)
  metrics.reconcilerActions.inc({ action: 'retention' }, pass.removed)
  metrics.reconcilerActions.inc({ action: 'delivery' }, pass.moved.length)
  for (const { action } of pass.moved) metrics.continuationDeliveries.inc({ action })
}
