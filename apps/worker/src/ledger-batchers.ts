import type { WorkerMetrics } from '@baton/observability'
import {
  claimAttempts,
  commitTerminalsReturning,
  createGroupBatcher,
  isolateUnexpected,
  type ClaimAttemptOutcome,
  type CommitTerminalInput,
  type CommittedTerminal,
  type Db,
  type GroupBatcher,
  type ResultPolicy,
} from '@baton/store'
import { observeClaims, observeCommits, type ExecutionTiming } from './ledger-metrics.ts'

/**
 * How the worker's claims and commits share statements (see createGroupBatcher). One batch in
 * flight: every statement costs a round trip and a commit, so under load it is cheaper to let
 * items gather behind the running statement than to run many small ones (the bench's
 * `pg_xacts_per_delegation` shows what a change here costs).
 */
export const LEDGER_BATCH = { maxBatch: 500, maxInFlight: 1 } as const

/**
 * Concurrent claims of this worker, batched into one fenced claim statement per group. A job's
 * attempt id is validated before it gets here (see `readAttemptJob`); isolation is the defence in
 * depth for anything else Postgres refuses.
 */
export function createClaimBatcher(
  db: Db,
  owner: { readonly ownerId: string; readonly leaseTtlMs: number },
  metrics?: WorkerMetrics,
): GroupBatcher<string, ClaimAttemptOutcome> {
  return createGroupBatcher<string, ClaimAttemptOutcome>(
    async (attemptIds) => {
      const outcomes = await claimAttempts(db, { ...owner, attemptIds })
      if (metrics !== undefined) observeClaims(metrics, outcomes)
      return outcomes
    },
    { ...LEDGER_BATCH, isolate: isolateUnexpected },
  )
}

/**
 * Concurrent terminal commits of this worker, batched into one fenced commit statement per group
 * (an artifact's commit runs its own transaction beside it). Each answers its outcome and, when
 * the ledger could tell it, the attempt as the commit left it (for the settlement's bell).
 * `timingOf` tells the metrics when an attempt was taken and cancelled (its execution is still
 * held while its commit runs).
 */
export function createCommitBatcher(
  db: Db,
  results: ResultPolicy,
  metrics?: {
    readonly metrics: WorkerMetrics
    readonly timingOf: (attemptId: string) => ExecutionTiming | undefined
  },
): GroupBatcher<CommitTerminalInput, CommittedTerminal> {
  return createGroupBatcher<CommitTerminalInput, CommittedTerminal>(
    async (inputs) => {
      const answers = await commitTerminalsReturning(db, inputs, results)
      if (metrics !== undefined) {
        const outcomes = answers.map((answer) => answer.outcome)
        observeCommits(metrics.metrics, inputs, outcomes, metrics.timingOf)
      }
      return answers
    },
    { ...LEDGER_BATCH, isolate: isolateUnexpected },
  )
}
