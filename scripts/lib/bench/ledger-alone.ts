// Baton's ledger alone: the accept, fenced claim and fenced commit statements the API and the
// workers make (the same @baton/store functions), called from the bench's own process in batches
// of `batch`, with no HTTP, no queue and no child. Batched wider than a run at the bench's load
// forms them, it is what Baton's guarantees cost in Postgres (and in the Node process that sends
// the statements) when nothing else runs: with the queue floor, the part of Baton's cost that no
// change outside its ledger statements can remove.
import { randomUUID } from 'node:crypto'
import { acceptDelegations, claimAttempts, commitTerminals, type Db } from '@baton/store'
import { NOOP_PROMPT } from './http-load.ts'

/** The owner the bench claims and commits as (one worker holding every lease). */
const OWNER = 'bench-ledger-alone'

/** What a run of the ledger alone did: delegations, statements, and items a statement refused. */
export interface LedgerAloneRun {
  readonly delegations: number
  readonly statements: number
  /** Should be 0: every accept, claim and commit of a fresh attempt applies. */
  readonly refused: number
}

/**
 * Accepts, claims and commits `count` delegations of a no-op child, `batch` per statement, one
 * batch after another (so at most `batch` attempts are open at once, as in a running service).
 */
export async function runLedgerAlone(
  db: Db,
  count: number,
  batch: number,
): Promise<LedgerAloneRun> {
  if (!Number.isInteger(batch) || batch < 1) throw new RangeError(`batch must be ≥ 1, got ${batch}`)
  let statements = 0
  let refused = 0
  for (let first = 0; first < count; first += batch) {
    const ids = Array.from({ length: Math.min(batch, count - first) }, (_, k) => ({
      attemptId: randomUUID(),
      newAgentId: randomUUID(),
      // The HTTP load's spread of sessions.
      sessionId: `bench-${(first + k) % 100}`,
    }))
    const accepted = await acceptDelegations(
      db,
      ids.map((id) => ({
        ...id,
        namespaceId: 'default',
        name: 'scripted',
        prompt: [{ type: 'text', text: NOOP_PROMPT }],
        metadata: {},
      })),
    )
    const claimed = await claimAttempts(db, {
      ownerId: OWNER,
      leaseTtlMs: 60_000,
      attemptIds: ids.map((id) => id.attemptId),
    })
    const committed = await commitTerminals(
      db,
      ids.map((id) => ({
        attemptId: id.attemptId,
        ownerId: OWNER,
        ownerGeneration: 1,
        result: { stopReason: 'completed', output: 'ok', failureCategory: null },
      })),
    )
    statements += 3
    refused +=
      accepted.filter((o) => o.kind !== 'accepted').length +
      claimed.filter((o) => o.kind !== 'claimed').length +
      committed.filter((o) => o !== 'committed').length
  }
  return { delegations: count, statements, refused }
}
