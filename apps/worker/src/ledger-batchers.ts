import {
  claimAttempts,
  createGroupBatcher,
  isTransientStoreError,
  type ClaimAttemptOutcome,
  type Db,
  type GroupBatcher,
} from '@baton/store'

/**
 * How the worker's claims and commits share statements (see createGroupBatcher). One batch in
 * flight: every statement costs a round trip and a commit, so under load it is cheaper to let
 * items gather behind the running statement than to run many small ones (two in flight made
 * batches of ~3.5 and 0.78 Postgres transactions per delegation in the bench; one made 0.49).
 */
export const LEDGER_BATCH = { maxBatch: 500, maxInFlight: 1 } as const

/**
 * A group that failed with an unexpected error is run again one item at a time, so one item the
 * ledger refuses (a value Postgres cannot take) fails alone and its neighbours get their results.
 * Re-running is safe: a failed statement wrote nothing. A transient error fails the group as it
 * is; each item's caller retries under its own rules.
 */
export const isolateUnexpected = (error: unknown): boolean => !isTransientStoreError(error)

/**
 * Concurrent claims of this worker, batched into one fenced claim statement per group. A job's
 * attempt id is validated before it gets here (see `readAttemptJob`); isolation is the defence in
 * depth for anything else Postgres refuses.
 */
export function createClaimBatcher(
  db: Db,
  owner: { readonly ownerId: string; readonly leaseTtlMs: number },
): GroupBatcher<string, ClaimAttemptOutcome> {
  return createGroupBatcher<string, ClaimAttemptOutcome>(
    (attemptIds) => claimAttempts(db, { ...owner, attemptIds }),
    { ...LEDGER_BATCH, isolate: isolateUnexpected },
  )
}
