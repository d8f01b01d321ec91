// Baton's jobs as BullMQ saw them arrive, read back from its ledger, so that raw BullMQ can be fed
// the same arrivals. The API enqueues each accept statement's delegations together, right after it
// commits (one `addBulk`, merged with the next statement's when one is still in flight), and every
// attempt accepted by one statement has the same `created_at` (`now()` is the start of its
// transaction). A worker holds a job from its claim to its terminal commit.
import type { LedgerTimes } from './wait-steps.ts'

/** The delegations of one accept statement: when it began, after the run's first, and how long each job was held. */
export interface ArrivalBatch {
  readonly atMs: number
  readonly holdMs: readonly number[]
}

/** Groups delegations by their accept statement, in the order the statements began. */
export function arrivalBatches(times: Iterable<LedgerTimes>): ArrivalBatch[] {
  const byAccept = new Map<number, number[]>()
  for (const t of times) {
    const hold = Math.max(0, t.committedAtMs - (t.claimedAtMs ?? t.acceptedAtMs))
    const holds = byAccept.get(t.acceptedAtMs)
    if (holds === undefined) byAccept.set(t.acceptedAtMs, [hold])
    else holds.push(hold)
  }
  const starts = [...byAccept.keys()].sort((a, b) => a - b)
  const first = starts[0] ?? 0
  return starts.map((at) => ({ atMs: at - first, holdMs: byAccept.get(at) ?? [] }))
}

/** Jobs per batch, on average. */
export function meanBatchSize(batches: readonly ArrivalBatch[]): number {
  if (batches.length === 0) return 0
  return batches.reduce((n, b) => n + b.holdMs.length, 0) / batches.length
}
