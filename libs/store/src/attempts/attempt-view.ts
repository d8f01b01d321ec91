import type { AnyAttemptView, DeliveryView, StopReason } from '@baton/contracts'
import type { AttemptDelivery, AttemptRecord } from './get-attempt.ts'

/** The public view of an attempt: what a caller may see, with dates as ISO strings. */
export function toAttemptView(record: AttemptRecord): AnyAttemptView {
  const base = {
    attemptId: record.id,
    agentId: record.agentId,
    sessionId: record.sessionId,
    name: record.name,
    createdAt: record.createdAt.toISOString(),
    startedAt: record.startedAt?.toISOString() ?? null,
    cancelRequested: record.cancelRequestedAt !== null,
    ...(record.cancelReason === null ? {} : { cancelReason: record.cancelReason }),
    steering: record.steering,
  }
  if (record.status !== 'terminal') return { ...base, status: record.status }
  return {
    ...base,
    status: 'terminal',
    // A terminal commit always stores a stop reason from the contract's list.
    stopReason: record.stopReason as StopReason,
    output: record.output ?? '',
    outputTruncated: record.outputTruncated ?? false,
    outputBytes: record.outputBytes ?? 0,
    digest: record.outputDigest ?? '',
    failureCategory: record.failureCategory,
    terminalAt: (record.terminalAt ?? record.createdAt).toISOString(),
    context: record.context,
    ...(record.delivery === null ? {} : { delivery: toDeliveryView(record.delivery) }),
    artifact:
      record.artifact === null
        ? null
        : { ...record.artifact, expiresAt: record.artifact.expiresAt.toISOString() },
  }
}

/** A delivery as callers see it: a result held for its still-active parent run is `pending`. */
export function toDeliveryView(delivery: AttemptDelivery): DeliveryView {
  return {
    state: delivery.state === 'held' ? 'pending' : delivery.state,
    receiptDigest: delivery.inputDigest,
    consumingRunId: delivery.consumerRunId,
    suppression:
      delivery.suppressionReason === null
        ? null
        : { reason: delivery.suppressionReason, runId: delivery.suppressionRunId },
  }
}
