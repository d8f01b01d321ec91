import type { AnyAttemptView, DeliveryView, StopReason } from '@baton/contracts'
import {
  createGroupBatcher,
  getAttempts,
  inScope,
  isolateUnexpected,
  type AttemptDelivery,
  type AttemptRecord,
  type Db,
  type GroupBatcher,
  type ReadScope,
} from '@baton/store'

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

/**
 * Reads one attempt as its public view, or `undefined` (also outside `scope`'s namespace, so a
 * caller cannot tell another tenant's attempt from a missing one). Concurrent reads on one pool
 * share a statement: a lone read leaves at once, and when many waits end together (a burst of
 * cancels, a fan-out settling) their final reads cost a few statements, not one each.
 */
export async function readAttemptView(
  db: Db,
  attemptId: string,
  scope: ReadScope,
): Promise<AnyAttemptView | undefined> {
  const record = await attemptReaderOf(db).submit(attemptId)
  return record === undefined || !inScope(record, scope) ? undefined : toAttemptView(record)
}

/** Each pool's read batcher, made on its first read and gone with the pool. */
const attemptReaders = new WeakMap<Db, GroupBatcher<string, AttemptRecord | undefined>>()

function attemptReaderOf(db: Db): GroupBatcher<string, AttemptRecord | undefined> {
  let reader = attemptReaders.get(db)
  if (reader === undefined) {
    reader = createGroupBatcher<string, AttemptRecord | undefined>(
      async (attemptIds) => {
        const records = await getAttempts(db, attemptIds)
        return attemptIds.map((id) => records.get(id))
      },
      // A read the ledger refuses (it should not: ids are validated first) fails alone.
      { maxBatch: 256, maxInFlight: 2, isolate: isolateUnexpected },
    )
    attemptReaders.set(db, reader)
  }
  return reader
}
