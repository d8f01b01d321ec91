import {
  BatonError,
  ErrorCode,
  isTerminalView,
  resultDigest,
  type AnyAttemptView,
} from '@baton/contracts'
import {
  createGroupBatcher,
  getAttempts,
  inScope,
  isolateUnexpected,
  toAttemptView,
  type AttemptRecord,
  type Db,
  type GroupBatcher,
  type ReadScope,
} from '@baton/store'

/**
 * Reads one attempt as its public view, or `undefined` (also outside `scope`'s namespace, so a
 * caller cannot tell another tenant's attempt from a missing one). Concurrent reads on one pool
 * share a statement: a lone read leaves at once, and when many waits end together (a burst of
 * cancels, a fan-out settling) their final reads cost a few statements, not one each.
 *
 * A terminal output the view shows whole (not truncated) is verified against the digest its
 * terminal commit bound before it is answered: one that no longer matches is never sent, the
 * read fails `ARTIFACT_INTEGRITY` as the artifact route does.
 */
export async function readAttemptView(
  db: Db,
  attemptId: string,
  scope: ReadScope,
): Promise<AnyAttemptView | undefined> {
  const record = await attemptReaderOf(db).submit(attemptId)
  if (record === undefined || !inScope(record, scope)) return undefined
  const view = toAttemptView(record)
  if (isTerminalView(view) && !view.outputTruncated && resultDigest(view.output) !== view.digest) {
    throw new BatonError(
      ErrorCode.ArtifactIntegrity,
      'the stored output does not match its digest; it is not served',
      { details: { attemptId, digest: view.digest } },
    )
  }
  return view
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
