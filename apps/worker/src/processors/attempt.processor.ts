import { setTimeout as sleep } from 'node:timers/promises'
import { WaitingError, type Job } from 'bullmq'
import { FailureCategory, type AttemptJob, type ClaimableDetail } from '@baton/contracts'
import {
  DISABLED_TRACING,
  type Logger,
  type Tracing,
  type WorkerMetrics,
} from '@baton/observability'
import { announceClaimable, announceSettled, type SettlementPublisher } from '@baton/queue'
import type { SubagentHistoryEvent } from '@baton/subagents'
import {
  commitProcessLoss,
  getAgentHistory,
  isParentAgentName,
  isTransientStoreError,
  releaseClaims,
  retryTransient,
  toAttemptView,
  type AttemptRecord,
  type ClaimAttemptOutcome,
  type ClaimedAttempt,
  type CommitTerminalInput,
  type CommittedTerminal,
  type Db,
  type TerminalResultInput,
} from '@baton/store'
import { executionAbortOf, type AbortCause } from '../lease/execution-abort.ts'
import { countProcessLoss } from '../ledger-metrics.ts'
import type { LeaseKeeper, OwnedExecution } from '../lease/lease-keeper.ts'
import type { WorkerOutputBudget } from '../output-budget.ts'
import type { SteeringDelivery } from '../steering/steering-delivery.ts'
import {
  HOSTED_RUN_OPTION,
  type HostedRunOption,
  type SubagentEntry,
  type WorkerSubagents,
} from '../subagents/subagent-catalog.ts'
import type { ActiveJob, ActiveJobs } from './active-jobs.ts'
import { readAttemptJob } from './attempt-job.ts'
import { traceRun } from './attempt-tracing.ts'
import { NOT_STARTED, runChild } from './run-child.ts'

export interface AttemptProcessorDeps {
  readonly db: Db
  readonly ownerId: string
  /** Fenced claim for this owner (batched with concurrent claims by the runtime). */
  readonly claim: (attemptId: string) => Promise<ClaimAttemptOutcome>
  /** Fenced terminal commit (batched with concurrent commits by the runtime). */
  readonly commit: (input: CommitTerminalInput) => Promise<CommittedTerminal>
  readonly heartbeatIntervalMs: number
  /** The lease a claim or renewal grants (default: twice the heartbeat interval, its least). */
  readonly leaseTtlMs?: number
  /** The jobs this worker runs, for its shutdown (see active-jobs.ts). */
  readonly activeJobs?: ActiveJobs
  /** Child output held at once by this worker (see output-budget.ts). */
  readonly outputBudget: WorkerOutputBudget
  readonly workspaceDir: string
  readonly leaseKeeper: LeaseKeeper
  readonly subagents: WorkerSubagents
  readonly steering: SteeringDelivery
  readonly publisher: SettlementPublisher
  readonly logger: Logger
  readonly metrics?: WorkerMetrics
  /** The child's run gets a span when on (claim and commit are traced by the runtime). */
  readonly tracing?: Tracing
  /**
   * Starts a hosted session's next run, if it is idle, and enqueues it: called after a hosted
   * run's terminal and after a result was handed back to a session (a continuation admitted).
   * Never rejects.
   */
  readonly startNextRun?: (session: HostedSession) => Promise<void>
}

/** A session whose next hosted run may start now. */
export interface HostedSession {
  readonly namespaceId: string
  readonly sessionId: string
}

/**
 * The `attempts` queue processor: at-least-once delivery in, exactly-once execution out.
 * Claim (fenced) → run the child under a lease the keeper renews → fenced terminal commit →
 * ring the completion doorbell. A job whose attempt is terminal or held is acknowledged without
 * running; one whose owner vanished mid-run gets the process-loss outcome, never a second run.
 * A job whose child never started when the worker stops (or when its lease could no longer be
 * confirmed) is handed back: its claim released in the ledger, the job back in the queue, for the
 * next worker to run.
 */
export function createAttemptProcessor(deps: AttemptProcessorDeps) {
  return async function processAttempt(
    job: Job<AttemptJob>,
    token?: string,
    jobSignal?: AbortSignal,
  ) {
    const attemptId = readAttemptJob(job, deps.logger)
    const log = deps.logger.child({ attemptId })
    const active = deps.activeJobs?.begin()
    try {
      // Before the claim: a steer recorded after it rings its bell before the run is attached.
      const releaseExpectation = deps.steering.expect(attemptId)
      let handBack = false
      try {
        handBack = (await claimAndRun(deps, attemptId, log, jobSignal, active)) === HAND_BACK
      } finally {
        releaseExpectation()
      }
      if (handBack) await handBackJob(job, token, log)
    } finally {
      active?.end()
    }
  }
}

/** The job goes back to the queue: its attempt was released (or never claimed) and never ran. */
const HAND_BACK: unique symbol = Symbol('hand back')

/**
 * Moves the job back to `wait`, for the next worker, and ends this delivery without completing
 * it. Should Redis not take it, the job completes: the reconciler enqueues the released attempt
 * again (an accepted attempt without a job).
 */
async function handBackJob(job: Job<AttemptJob>, token: string | undefined, log: Logger) {
  try {
    await job.moveToWait(token)
  } catch (error) {
    log.warn({ err: error }, 'job not handed back; the reconciler will enqueue the attempt again')
    return
  }
  log.info('attempt handed back to the queue before its child started')
  throw new WaitingError()
}

/** Why the worker stops the job's execution, when it stops it with a cause of its own. */
function stopCause(signal: AbortSignal | undefined): AbortCause | undefined {
  if (signal?.aborted !== true) return undefined
  return executionAbortOf(signal)?.abortCause
}

async function claimAndRun(
  deps: AttemptProcessorDeps,
  attemptId: string,
  log: Logger,
  jobSignal: AbortSignal | undefined,
  active: ActiveJob | undefined,
): Promise<typeof HAND_BACK | undefined> {
  // Stopped before anything was claimed: the job goes back as it came.
  if (jobSignal?.reason === 'shutdown') return HAND_BACK
  const claimSentAt = performance.now()
  const claim = await claimWithRetry(deps, attemptId, log, jobSignal)
  if (claim === UNANSWERED) {
    // Stopped while the claim's answer was unknown: whatever claim of this owner holds the
    // attempt was never run here.
    const released = await releaseClaim(deps, { attemptId }, claimSentAt, log)
    return released ? HAND_BACK : undefined
  }
  switch (claim.kind) {
    case 'terminal':
    case 'held':
    case 'missing':
      log.debug({ outcome: claim.kind }, 'attempt not claimable; acknowledging job')
      return undefined
    case 'orphaned': {
      const made = await commitProcessLoss(deps.db, [
        { attemptId, ownerGeneration: claim.ownerGeneration },
      ])
      countProcessLoss(deps.metrics, made.length)
      const [lost] = made
      if (lost !== undefined) {
        log.warn('owner vanished mid-run; recorded process loss')
        ringTerminal(deps, attemptId, log, undefined, lost.parentSession)
        void deps.startNextRun?.(lost.session)
      }
      return undefined
    }
    case 'claimed':
      break
    default:
      return assertNever(claim)
  }

  const entry = deps.subagents.entries.get(claim.attempt.name)
  const execution = deps.leaseKeeper.hold(attemptId, claim.attempt.ownerGeneration, claimSentAt)
  // Held from the child's first output until the terminal commit is over.
  const outputHold = deps.outputBudget.open()
  const onJobAbort = (): void =>
    execution.abort(jobSignal?.reason === 'shutdown' ? 'shutdown' : 'cancelled')
  if (jobSignal?.aborted === true) onJobAbort()
  jobSignal?.addEventListener('abort', onJobAbort, { once: true })
  try {
    log.debug({ generation: claim.attempt.ownerGeneration }, 'attempt claimed')
    const history = await ownedStoreCall(
      deps,
      log,
      'reading the agent history',
      () => loadHistory(deps, execution, claim.attempt),
      execution.signal,
    )
    // Stopping (or unsure of its lease) before the child started: nothing ran, nothing to record;
    // the claim is handed back for the next worker (the ledger refuses it if the lease is gone).
    const handBack = async (): Promise<typeof HAND_BACK | undefined> => {
      const released = await releaseClaim(
        deps,
        { attemptId, ownerGeneration: execution.ownerGeneration },
        execution.confirmedAt,
        log,
      )
      return released ? HAND_BACK : undefined
    }
    const before = stopCause(execution.signal)
    if (before === 'shutdown' || before === 'lease_lost') return handBack()
    if (history === undefined || execution.lost) {
      log.warn('lease lost before the child started; writing nothing')
      return undefined
    }
    let result: TerminalResultInput | typeof LOST | typeof NOT_STARTED
    if (history === STORE_FAULT) result = storeFaultResult()
    else if (history === ABORTED || execution.signal.aborted)
      result = { stopReason: 'aborted', output: '', failureCategory: FailureCategory.Cancelled }
    else if (entry === undefined)
      result = { stopReason: 'error', output: '', failureCategory: FailureCategory.UnknownSubagent }
    else {
      const child = traceRun(deps.tracing ?? DISABLED_TRACING, claim.attempt, () =>
        runChild(deps.subagents, hostedEntry(entry, claim.attempt), claim.attempt, {
          signal: execution.signal,
          workspaceDir: deps.workspaceDir,
          history,
          logger: log,
          outputHold,
          onRun: (run) => deps.steering.attach(execution, run, claim.attempt.steeringPending),
        }),
      )
      result = await Promise.race([child, execution.whenLost.then((): typeof LOST => LOST)])
      if (result === LOST) {
        // Confirmed loss: nothing more may be written, and shutdown counts this job drained;
        // a child that ignores its abort keeps its slot (and the worker's concurrency) until it
        // returns, instead of running on untracked.
        active?.markLost()
        log.warn('lease lost during execution; writing nothing')
        // A start aborted before its run was ready ran nothing: handed back if the ledger lets it.
        if ((await child.catch(() => undefined)) === NOT_STARTED) return handBack()
        return undefined
      }
      if (result === NOT_STARTED) {
        const cause = stopCause(execution.signal)
        if (cause === 'shutdown' || cause === 'lease_lost') return handBack()
        result = { stopReason: 'aborted', output: '', failureCategory: FailureCategory.Cancelled }
      }
    }
    if (execution.lost) {
      log.warn('lease lost during execution; writing nothing')
      return undefined
    }
    // Marks of the messages the child had land before the commit that ends the right to mark;
    // a mark that failed is tried again (a refused one leaves the verdict to the commit's fence).
    const marked = await ownedStoreCall(deps, log, 'marking steering delivered', () =>
      deps.steering.finish(attemptId),
    )
    if (marked === STORE_FAULT) log.error('steering marks kept failing; committing without them')
    execution.beginCommit()
    const answer = await commitWithRetry(
      deps,
      execution,
      withAbortCategory(result, execution.signal),
      traceIdOf(claim.attempt),
      log,
    )
    // Terminal now: stop heartbeating it at once, so no renewal reports the finished lease lost.
    deps.leaseKeeper.release(attemptId)
    if (answer.outcome === 'committed' || answer.outcome === 'replayed') {
      ringTerminal(deps, attemptId, log, answer.record, answer.parentSession)
      // A hosted run ended (its session's next run may start), or a result came back to a
      // session (its continuation may be the next run).
      if (isParentAgentName(claim.attempt.name) && answer.record !== undefined)
        void deps.startNextRun?.({
          namespaceId: answer.record.namespaceId,
          sessionId: claim.attempt.sessionId,
        })
      if (answer.parentSession !== undefined) void deps.startNextRun?.(answer.parentSession)
    }
    return undefined
  } finally {
    jobSignal?.removeEventListener('abort', onJobAbort)
    deps.steering.detach(attemptId)
    deps.leaseKeeper.release(attemptId)
    outputHold.release()
  }
}

/** A hosted run's entry tells its tools which run it is (see `HOSTED_RUN_OPTION`). */
function hostedEntry(entry: SubagentEntry, attempt: ClaimedAttempt): SubagentEntry {
  if (!isParentAgentName(attempt.name)) return entry
  const run: HostedRunOption = {
    runId: attempt.attemptId,
    profile: attempt.name.slice(attempt.name.indexOf(':') + 1),
  }
  return { ...entry, agentOptions: { ...entry.agentOptions, [HOSTED_RUN_OPTION]: run } }
}

/** A claim whose answer never came before the job was stopped. */
const UNANSWERED: unique symbol = Symbol('claim unanswered')

/**
 * The claim, retried while it fails transiently (at or below the heartbeat interval) until the
 * ledger answers or the job is stopped (`UNANSWERED`). A retry after an answer lost on the way
 * back recognises this owner's own claim (see the runtime's claim): it runs, exactly once.
 */
async function claimWithRetry(
  deps: AttemptProcessorDeps,
  attemptId: string,
  log: Logger,
  jobSignal: AbortSignal | undefined,
): Promise<ClaimAttemptOutcome | typeof UNANSWERED> {
  try {
    return await retryTransient(() => deps.claim(attemptId), {
      maxDelayMs: deps.heartbeatIntervalMs,
      ...(jobSignal === undefined ? {} : { signal: jobSignal }),
      onRetry: (error, delayMs) =>
        log.warn({ err: error, delayMs }, 'claim failed transiently; retrying'),
    })
  } catch (error) {
    if (jobSignal?.aborted === true && isTransientStoreError(error)) return UNANSWERED
    throw error
  }
}

/**
 * Releases this owner's claim on an attempt whose child never started, retrying transient
 * failures while the lease it confirmed (from `confirmedAt`) may still be live: past that the
 * ledger refuses it anyway. True when it was handed back; otherwise the attempt was lost
 * meanwhile, or its lease will expire and the reconciler records it.
 */
async function releaseClaim(
  deps: AttemptProcessorDeps,
  claim: { readonly attemptId: string; readonly ownerGeneration?: number },
  confirmedAt: number,
  log: Logger,
): Promise<boolean> {
  const leaseTtlMs = deps.leaseTtlMs ?? deps.heartbeatIntervalMs * 2
  const liveForMs = Math.max(0, Math.floor(confirmedAt + leaseTtlMs - performance.now()))
  try {
    const released = await retryTransient(
      () => releaseClaims(deps.db, { ownerId: deps.ownerId, claims: [claim] }),
      {
        maxDelayMs: deps.heartbeatIntervalMs,
        signal: AbortSignal.timeout(liveForMs),
        onRetry: (error, delayMs) =>
          log.warn({ err: error, delayMs }, 'release of a claim failed transiently; retrying'),
      },
    )
    return released.length > 0
  } catch (error) {
    log.error(
      { err: error },
      'claim of a child never started not released; left for the reconciler once its lease expires',
    )
    return false
  }
}

/** The delegation's `metadata.traceId`, which the terminal fingerprint binds. */
function traceIdOf(attempt: ClaimedAttempt): string | undefined {
  const metadata = attempt.metadata as { readonly traceId?: unknown } | null
  return typeof metadata?.traceId === 'string' ? metadata.traceId : undefined
}

const LOST: unique symbol = Symbol('lease lost')

/**
 * An aborted result records why the worker aborted it (a user's cancel, this worker shutting
 * down): the category its abort reason carries, whatever the child declared.
 */
function withAbortCategory(result: TerminalResultInput, signal: AbortSignal): TerminalResultInput {
  if (result.stopReason !== 'aborted') return result
  const reason = executionAbortOf(signal)
  return reason === undefined ? result : { ...result, failureCategory: reason.failureCategory }
}

/**
 * How often an unexpected (non-transient) store error is tried again before the attempt records
 * a failed terminal instead. Ownership is kept meanwhile: the lease keeper keeps renewing.
 */
const UNEXPECTED_STORE_TRIES = 3

/** A store call kept failing with an unexpected error (see `ownedStoreCall`). */
const STORE_FAULT: unique symbol = Symbol('store fault')

/** The truthful terminal of an attempt whose own store calls kept failing unexpectedly. */
function storeFaultResult(): TerminalResultInput {
  return { stopReason: 'error', output: '', failureCategory: FailureCategory.StoreFault }
}

/** A store call given up because its execution was aborted before it succeeded. */
const ABORTED: unique symbol = Symbol('aborted')

/**
 * A store call made while this worker owns the attempt. Transient failures are retried at or below
 * the heartbeat interval for as long as they last; an unexpected error is retried a few times, one
 * heartbeat interval apart, then reported as `STORE_FAULT` — never thrown, so the job never ends
 * with the lease silently released (which would turn a live worker's attempt into process loss).
 * Only the ledger's own answer (lease lost, stale fence, missing) gives ownership up. With a
 * `signal` (a call made before the child started), its abort ends the retrying (`ABORTED`); a
 * commit takes none: a finished child's result is retried until the ledger answers.
 */
async function ownedStoreCall<T>(
  deps: AttemptProcessorDeps,
  log: Logger,
  what: string,
  call: () => Promise<T>,
  signal?: AbortSignal,
): Promise<T | typeof STORE_FAULT | typeof ABORTED> {
  const aborted = (): boolean => signal?.aborted === true
  for (let tries = 1; ; tries += 1) {
    if (aborted()) return ABORTED
    try {
      return await retryTransient(call, {
        maxDelayMs: deps.heartbeatIntervalMs,
        ...(signal === undefined ? {} : { signal }),
        onRetry: (error, delayMs) =>
          log.warn({ err: error, delayMs, what }, 'store call failed transiently; retrying'),
      })
    } catch (error) {
      if (aborted()) return ABORTED
      log.error({ err: error, what, tries }, 'store call failed unexpectedly; ownership kept')
      if (tries >= UNEXPECTED_STORE_TRIES) return STORE_FAULT
      await sleep(
        deps.heartbeatIntervalMs,
        undefined,
        signal === undefined ? {} : { signal },
      ).catch(() => undefined)
    }
  }
}

/**
 * The agent's durable history for a continuation (empty for a new agent), read while this worker
 * owns the attempt; `undefined` means the lease was confirmed lost meanwhile.
 */
async function loadHistory(
  deps: AttemptProcessorDeps,
  execution: OwnedExecution,
  attempt: ClaimedAttempt,
): Promise<readonly SubagentHistoryEvent[] | undefined> {
  if (attempt.historyLength === 0) return []
  if (execution.lost) return undefined
  const history = await getAgentHistory(deps.db, attempt.agentId)
  // The provider validates the events before it adopts them.
  return (history?.events ?? []).map((e) => e.event as SubagentHistoryEvent)
}

/**
 * Commits the terminal result, retrying store failures (see `ownedStoreCall`) until the ledger
 * answers: its answer is what confirms success or loss (a renewal that raced the commit is not —
 * see `beginCommit`). A commit applied whose response was lost comes back as `replayed` on the
 * retry (same fingerprint). A result the store keeps failing on is replaced by the `store_fault`
 * terminal; only if that one fails too is the attempt left to the reconciler.
 */
async function commitWithRetry(
  deps: AttemptProcessorDeps,
  execution: OwnedExecution,
  terminal: TerminalResultInput,
  traceId: string | undefined,
  log: Logger,
): Promise<CommittedTerminal | { readonly outcome: 'abandoned' }> {
  let result = terminal
  let faulted = false
  for (;;) {
    const answer = await ownedStoreCall(deps, log, 'committing the terminal', () =>
      deps.commit({
        attemptId: execution.attemptId,
        ownerId: deps.ownerId,
        ownerGeneration: execution.ownerGeneration,
        result,
        traceId,
      }),
    )
    if (answer === ABORTED) throw new Error('a commit without a signal was aborted')
    if (answer === STORE_FAULT) {
      if (faulted) {
        log.error('even the store-fault terminal failed; the reconciler will finish this attempt')
        return { outcome: 'abandoned' }
      }
      faulted = true
      result = storeFaultResult()
      continue
    }
    const { outcome } = answer
    switch (outcome) {
      case 'committed':
      case 'replayed':
        log.debug({ outcome, stopReason: result.stopReason }, 'terminal committed')
        return answer
      case 'history_conflict':
      case 'history_too_large':
        // The history moved on under this attempt, or would pass its namespace's agent history
        // limit: record the outcome, keep the result, append nothing.
        log.warn({ outcome }, 'context delta not appended; committing without it')
        result = {
          stopReason: 'error',
          output: result.output,
          failureCategory:
            outcome === 'history_conflict'
              ? FailureCategory.ContextRejected
              : FailureCategory.HistoryLimitExceeded,
        }
        continue
      case 'refused':
      case 'lease_lost':
      case 'stale_fence':
      case 'missing':
        log.warn({ outcome }, 'terminal commit refused by the ledger')
        return answer
      default:
        return assertNever(outcome)
    }
  }
}

/**
 * Rings the settlement's bell; with the attempt as the commit left it, the bell carries its
 * terminal view, and a caller waiting on it is answered without reading it back. With a parent
 * session (the commit admitted or held the result's continuation), also that session's claim
 * bell.
 *
 * Not awaited: the bell is written at once on the publisher's connection, and the job is
 * acknowledged without waiting for Redis to answer it, so a Redis slow to answer a bell holds no
 * job's slot and no acknowledgement. A bell that fails is logged (`announceSettled` never
 * rejects): waiters fall back on the ledger.
 */
function ringTerminal(
  deps: AttemptProcessorDeps,
  attemptId: string,
  log: Logger,
  record?: AttemptRecord,
  parentSession?: ClaimableDetail,
): void {
  const detail =
    record === undefined
      ? undefined
      : { namespaceId: record.namespaceId, view: toAttemptView(record) }
  void announceSettled(deps.publisher, attemptId, log, detail)
  if (parentSession !== undefined)
    void announceClaimable(deps.publisher, attemptId, parentSession, log)
}

function assertNever(value: never): never {
  throw new Error(`unexpected outcome: ${JSON.stringify(value)}`)
}
