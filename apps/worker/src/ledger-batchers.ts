import type { WorkerMetrics } from '@baton/observability'
import {
  claimAttempts,
  commitTerminalsReturning,
  createGroupBatcher,
  isolateUnexpected,
  isTransientStoreError,
  resultNeedsArtifact,
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

/** One claim of a claim group: `adopt` when an earlier claim of it went unanswered. */
interface ClaimRequest {
  readonly attemptId: string
  readonly adopt: boolean
}

/**
 * Concurrent claims of this worker, batched into one fenced claim statement per group. A job's
 * attempt id is validated before it gets here (see `readAttemptJob`); isolation is the defence in
 * depth for anything else Postgres refuses.
 *
 * A claim that failed transiently may have been applied with its answer lost (a group of them, a
 * connection reset after the commit): its attempt is remembered, and the next claim of it (the
 * job's own retry, or a redelivery to this worker) adopts the claim it finds this owner holding,
 * unless an execution of it runs here (`runsHere`). So it runs, once, instead of being
 * acknowledged as `held` and ending as process loss a lease later.
 */
export function createClaimBatcher(
  db: Db,
  owner: { readonly ownerId: string; readonly leaseTtlMs: number },
  options: {
    readonly metrics?: WorkerMetrics
    readonly runsHere?: (attemptId: string) => boolean
  } = {},
): { submit(attemptId: string): Promise<ClaimAttemptOutcome> } {
  const batcher = createGroupBatcher<ClaimRequest, ClaimAttemptOutcome>(
    async (requests) => {
      const outcomes = await claimAttempts(db, {
        ...owner,
        attemptIds: requests.map((r) => r.attemptId),
        adopt: requests.filter((r) => r.adopt).map((r) => r.attemptId),
      })
      if (options.metrics !== undefined) observeClaims(options.metrics, outcomes)
      return outcomes
    },
    { ...LEDGER_BATCH, isolate: isolateUnexpected },
  )
  const unanswered = new Set<string>()
  return {
    async submit(attemptId) {
      // Taken out before the claim is sent: of two jobs of one attempt, one adopts it.
      const adopt = unanswered.delete(attemptId) && options.runsHere?.(attemptId) !== true
      try {
        return await batcher.submit({ attemptId, adopt })
      } catch (error) {
        if (isTransientStoreError(error)) unanswered.add(attemptId)
        throw error
      }
    },
  }
}

/**
 * Concurrent terminal commits of this worker, batched into one fenced commit statement per group.
 * A result that needs an artifact is committed apart, at once: its content is staged in chunks
 * before its own transaction (see `commitTerminals`), and a batch of small results must not wait
 * behind those writes. Each answers its outcome and, when the ledger could tell it, the attempt as
 * the commit left it (for the settlement's bell). `timingOf` tells the metrics when an attempt was
 * taken and cancelled (its execution is still held while its commit runs).
 */
export function createCommitBatcher(
  db: Db,
  results: ResultPolicy,
  metrics?: {
    readonly metrics: WorkerMetrics
    readonly timingOf: (attemptId: string) => ExecutionTiming | undefined
  },
): GroupBatcher<CommitTerminalInput, CommittedTerminal> {
  const commit = async (inputs: CommitTerminalInput[]): Promise<CommittedTerminal[]> => {
    const answers = await commitTerminalsReturning(db, inputs, results)
    if (metrics !== undefined) {
      const outcomes = answers.map((answer) => answer.outcome)
      observeCommits(metrics.metrics, inputs, outcomes, metrics.timingOf)
    }
    return answers
  }
  const batcher = createGroupBatcher<CommitTerminalInput, CommittedTerminal>(commit, {
    ...LEDGER_BATCH,
    isolate: isolateUnexpected,
  })
  let apart = 0
  return {
    async submit(input) {
      if (!resultNeedsArtifact(input.result, results.inlineBytes)) return batcher.submit(input)
      apart += 1
      try {
        const [answer] = await commit([input])
        if (answer === undefined) throw new Error('commitTerminals returned no answer')
        return answer
      } finally {
        apart -= 1
      }
    },
    get pending() {
      return batcher.pending + apart
    },
  }
}
