// Where one submit-and-wait spends its time, read from the ledger's own timestamps: a Baton attempt
// row records when its accept, fenced claim and fenced commit statements began (`now()` is the
// start of the statement's transaction), a hand-rolled row when its insert and the worker's update
// began, and the bench records when it sent the request and got the answer. Both clocks are this machine's wall clock (the bench already requires its Postgres
// server to be local: it reads the server's CPU from /proc).
import { percentile } from './stats.ts'

/** One sequential submit-and-wait as the client saw it; times are epoch milliseconds. */
export interface TimedCall {
  readonly attemptId: string
  readonly sentAtMs: number
  readonly answeredAtMs: number
}

/**
 * A delegation's statement start times from its ledger, epoch milliseconds: the row written at
 * accept, the claim (Baton's fence; the hand-rolled service has none) and the terminal write.
 */
export interface LedgerTimes {
  readonly acceptedAtMs: number
  readonly claimedAtMs?: number | undefined
  readonly committedAtMs: number
}

/** The p50 of each step, in ms. The four p50s need not add up to the p50 of the whole wait. */
export interface WaitSteps {
  /** Request sent → accept statement begins: HTTP, authentication, validation, batching. */
  readonly toAcceptMs: number
  /** Accept begins → terminal write begins: the accept's commit, the enqueue, the job reaching a worker, any claim, the child's run. */
  readonly acceptToCommitMs: number
  /** Accept begins → claim begins: the accept's commit, the enqueue, the job reaching a worker (without claims: undefined). */
  readonly acceptToClaimMs: number | undefined
  /** Claim begins → commit begins: the claim's commit, the child's run (without claims: undefined). */
  readonly claimToCommitMs: number | undefined
  /** Commit begins → answer received: the commit, the settlement bell, the final read, the reply. */
  readonly commitToAnswerMs: number
  /** Calls whose delegation had its times (the others are left out). */
  readonly calls: number
}

/** Now on the wall clock, in epoch milliseconds with sub-millisecond precision. */
export const wallClockMs = (): number => performance.timeOrigin + performance.now()

export function waitSteps(
  calls: readonly TimedCall[],
  ledger: ReadonlyMap<string, LedgerTimes>,
): WaitSteps {
  const toAccept: number[] = []
  const acceptToCommit: number[] = []
  const acceptToClaim: number[] = []
  const claimToCommit: number[] = []
  const commitToAnswer: number[] = []
  for (const call of calls) {
    const times = ledger.get(call.attemptId)
    if (times === undefined) continue
    toAccept.push(times.acceptedAtMs - call.sentAtMs)
    acceptToCommit.push(times.committedAtMs - times.acceptedAtMs)
    if (times.claimedAtMs !== undefined) {
      acceptToClaim.push(times.claimedAtMs - times.acceptedAtMs)
      claimToCommit.push(times.committedAtMs - times.claimedAtMs)
    }
    commitToAnswer.push(call.answeredAtMs - times.committedAtMs)
  }
  const p50 = (values: number[]): number =>
    percentile(
      values.sort((a, b) => a - b),
      50,
    )
  const claimed = acceptToClaim.length > 0
  return {
    toAcceptMs: p50(toAccept),
    acceptToCommitMs: p50(acceptToCommit),
    acceptToClaimMs: claimed ? p50(acceptToClaim) : undefined,
    claimToCommitMs: claimed ? p50(claimToCommit) : undefined,
    commitToAnswerMs: p50(commitToAnswer),
    calls: toAccept.length,
  }
}
