import type { AnyAttemptView } from '@baton/contracts'
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
