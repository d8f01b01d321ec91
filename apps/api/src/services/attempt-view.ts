import type { AnyAttemptView, StopReason } from '@baton/contracts'
import { getAttempt, type AttemptRecord, type Db } from '@baton/store'

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
    artifact:
      record.artifact === null
        ? null
        : { ...record.artifact, expiresAt: record.artifact.expiresAt.toISOString() },
  }
}

/** Reads one attempt as its public view, or `undefined`. */
export async function readAttemptView(
  db: Db,
  attemptId: string,
): Promise<AnyAttemptView | undefined> {
  const record = await getAttempt(db, attemptId)
  return record === undefined ? undefined : toAttemptView(record)
}
