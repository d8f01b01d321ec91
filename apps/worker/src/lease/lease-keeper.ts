import type { Logger, WorkerMetrics } from '@baton/observability'
import { isTransientStoreError, renewLeases, type Db, type LedgerTimeouts } from '@baton/store'
import { executionAbort, type AbortCause } from './execution-abort.ts'

/** One execution this worker owns: its fence and its abort controller. */
export interface OwnedExecution {
  readonly attemptId: string
  readonly ownerGeneration: number
  readonly signal: AbortSignal
  /**
   * Set once the lease is gone, or given up: a heartbeat confirmed its loss, or it went unconfirmed
   * for so long that it may have expired. Write nothing more; the reconciler records the loss once
   * the lease has expired.
   */
  readonly lost: boolean
  /**
   * Resolves when `lost` is set. The processor stops waiting for the child then: a child that
   * ignores its abort must not hold a shutdown that counts confirmed owner loss as drained.
   */
  readonly whenLost: Promise<void>
  abort(cause: AbortCause): void
  /** `performance.now()` when this worker took the execution (just after its claim). */
  readonly heldAt: number
  /**
   * `performance.now()` when the last renewal (or the claim) that the ledger confirmed was sent:
   * the lease was live until at least one lease TTL after it.
   */
  readonly confirmedAt: number
  /** `performance.now()` of its first abort, when that abort was a cancel; else undefined. */
  readonly cancelledAt: number | undefined
  /**
   * The terminal commit is under way: from now on its own outcome decides. A renewal that finds
   * the attempt no longer running (it may be this very commit, applied but not yet answered) is
   * then not taken as loss; the commit reports `lease_lost` or `stale_fence` if it really was.
   */
  beginCommit(): void
}

export interface LeaseKeeper {
  /**
   * Holds an execution this worker just claimed; `confirmedAt` is when that claim was sent (the
   * lease it granted runs from then at the earliest), now when absent.
   */
  hold(attemptId: string, ownerGeneration: number, confirmedAt?: number): OwnedExecution
  release(attemptId: string): void
  get(attemptId: string): OwnedExecution | undefined
  /**
   * Aborts every owned execution with `cause`, and every execution held from now on (the start
   * barrier: a job claimed while shutting down never runs its child unaborted).
   */
  abortAll(cause: AbortCause): void
  /** Executions held and not confirmed lost (a lost one is held until its child returns). */
  readonly size: number
  /** The attempts of those executions. */
  ownedAttempts(): string[]
  /** Runs one heartbeat now (tests and shutdown); normally the timer does. */
  beat(): Promise<void>
  start(): void
  stop(): Promise<void>
}

/**
 * An execution as the keeper holds it. A class, so that its getters live on one prototype: an
 * object literal with getters gets a hidden class of its own per object, which keeps the object,
 * and everything its closures reach, alive through every young-generation collection (see
 * `@baton/queue`'s lean pipelines).
 */
class HeldExecution implements OwnedExecution {
  readonly attemptId: string
  readonly ownerGeneration: number
  readonly signal: AbortSignal
  readonly heldAt = performance.now()
  confirmedAt: number
  readonly whenLost: Promise<void>
  #controller = new AbortController()
  #lost = false
  #resolveLost!: () => void
  #committing = false
  #cancelledAt: number | undefined

  constructor(attemptId: string, ownerGeneration: number, confirmedAt: number) {
    this.attemptId = attemptId
    this.ownerGeneration = ownerGeneration
    this.confirmedAt = confirmedAt
    this.signal = this.#controller.signal
    this.whenLost = new Promise<void>((resolve) => (this.#resolveLost = resolve))
  }

  get cancelledAt(): number | undefined {
    return this.#cancelledAt
  }

  get lost(): boolean {
    return this.#lost
  }

  get committing(): boolean {
    return this.#committing
  }

  markLost(): void {
    this.#lost = true
    this.#resolveLost()
  }

  beginCommit(): void {
    this.#committing = true
  }

  abort(cause: AbortCause): void {
    if (this.#controller.signal.aborted) return
    if (cause === 'cancelled') this.#cancelledAt = performance.now()
    this.#controller.abort(executionAbort(cause))
  }
}

/**
 * Renews every lease this worker holds with ONE statement per interval. A lease confirmed lost
 * aborts its child locally and marks the execution so nothing more is written; a pending cancel
 * request in the ledger aborts the child (the fallback for a missed cancel event). A transient
 * store error keeps local ownership: the next beat, one interval later, tries again.
 *
 * A renewal that has not answered within one interval does not hold the next one back: the next
 * beat sends another (renewing twice only extends a lease), and a late answer still counts. `db`
 * should be a pool of the keeper's own whose calls are bounded by about one interval, so that a
 * hung connection or a pool busy with commits never delays a renewal (see the runtime).
 *
 * Unconfirmed for too long, a lease may be expiring: when the lease the ledger last confirmed
 * (from when that renewal or claim was sent) could expire before the next beat, the execution is
 * given up as lost and its child aborted (`lease_lost`), though nothing confirmed the loss yet, so
 * that no child runs past its lease for more than the time it takes to stop. It is renewed no
 * more and writes nothing (a child that never started is handed back if the ledger still lets it):
 * once the lease expires, the reconciler records the process loss, as for a vanished worker.
 */
export function createLeaseKeeper(deps: {
  db: Db
  ownerId: string
  leaseTtlMs: number
  heartbeatIntervalMs: number
  logger: Logger
  /** Undelivered steering waits for an owned attempt (the fallback for a missed event). */
  onSteeringPending?: (attemptId: string) => void
  metrics?: Pick<
    WorkerMetrics,
    'leaseRenewals' | 'leaseLosses' | 'leaseRenewalSeconds' | 'leaseRemainingSeconds'
  >
}): LeaseKeeper {
  const owned = new Map<string, HeldExecution>()
  let timer: NodeJS.Timeout | undefined
  /** Renewals in flight, each with when it was sent. */
  const inFlight = new Map<Promise<void>, number>()
  let abortNewWith: AbortCause | undefined

  async function renew(sentAt: number): Promise<void> {
    // A lost execution stays held until its child returns (it still counts against concurrency);
    // there is nothing left to renew for it.
    const leases = [...owned.values()]
      .filter((e) => !e.lost)
      .map((e) => ({ attemptId: e.attemptId, ownerGeneration: e.ownerGeneration }))
    if (leases.length === 0) return
    let renewals
    try {
      renewals = await renewLeases(deps.db, {
        ownerId: deps.ownerId,
        leases,
        leaseTtlMs: deps.leaseTtlMs,
      })
    } catch (error) {
      const level = isTransientStoreError(error) ? 'warn' : 'error'
      deps.logger[level](
        { err: error, leases: leases.length },
        'heartbeat failed; keeping ownership',
      )
      return
    }
    const answeredAt = performance.now()
    deps.metrics?.leaseRenewalSeconds.observe((answeredAt - sentAt) / 1000)
    deps.metrics?.leaseRenewals.inc(renewals.filter((r) => r.status === 'renewed').length)
    for (const renewal of renewals) {
      const execution = owned.get(renewal.attemptId)
      if (execution === undefined) continue
      if (renewal.status === 'skipped') {
        deps.logger.debug(
          { attemptId: renewal.attemptId },
          'renewal skipped a lease whose row another transaction holds',
        )
      } else if (renewal.status === 'lost' && execution.committing) {
        deps.logger.debug(
          { attemptId: renewal.attemptId },
          'renewal found the attempt no longer running while its commit is under way',
        )
      } else if (renewal.status === 'lost') {
        if (execution.lost) continue
        deps.logger.warn({ attemptId: renewal.attemptId }, 'lease lost; aborting child')
        execution.markLost()
        execution.abort('lease_lost')
        deps.metrics?.leaseLosses.inc()
      } else {
        // What the lease still had, by what this worker knew, when the renewal answered.
        deps.metrics?.leaseRemainingSeconds.observe(
          Math.max(0, execution.confirmedAt + deps.leaseTtlMs - answeredAt) / 1000,
        )
        execution.confirmedAt = Math.max(execution.confirmedAt, sentAt)
        if (renewal.cancelRequested && !execution.signal.aborted) {
          deps.logger.info({ attemptId: renewal.attemptId }, 'cancel request found by heartbeat')
          execution.abort('cancelled')
        } else if (renewal.steeringPending) {
          deps.onSteeringPending?.(renewal.attemptId)
        }
      }
    }
  }

  /** Aborts the children whose confirmed lease could expire before the next beat. */
  function abortUnconfirmed(now: number): void {
    for (const execution of owned.values()) {
      if (execution.lost || execution.committing) continue
      const unconfirmedMs = now - execution.confirmedAt
      if (unconfirmedMs + deps.heartbeatIntervalMs < deps.leaseTtlMs) continue
      deps.logger.warn(
        { attemptId: execution.attemptId, unconfirmedMs },
        'lease unconfirmed for too long; giving it up and aborting child',
      )
      execution.markLost()
      execution.abort('lease_lost')
      deps.metrics?.leaseLosses.inc()
    }
  }

  function beat(): Promise<void> {
    const now = performance.now()
    abortUnconfirmed(now)
    // One renewal per interval: one sent within the last half interval (a beat the timer did not
    // make) is the current one. An older one still in flight may hang on a connection that
    // stopped answering: the next one does not wait for it (two at once only skip each other's
    // rows).
    for (const [renewal, sentAt] of inFlight)
      if (now - sentAt < deps.heartbeatIntervalMs / 2) return renewal
    const renewal = renew(now).finally(() => inFlight.delete(renewal))
    inFlight.set(renewal, now)
    return renewal
  }

  return {
    hold(attemptId, ownerGeneration, confirmedAt = performance.now()) {
      const execution = new HeldExecution(attemptId, ownerGeneration, confirmedAt)
      owned.set(attemptId, execution)
      if (abortNewWith !== undefined) execution.abort(abortNewWith)
      return execution
    },
    release(attemptId) {
      owned.delete(attemptId)
    },
    get: (attemptId) => owned.get(attemptId),
    abortAll(cause) {
      abortNewWith = cause
      for (const execution of owned.values()) execution.abort(cause)
    },
    ownedAttempts: () => [...owned.values()].filter((e) => !e.lost).map((e) => e.attemptId),
    get size() {
      let live = 0
      for (const execution of owned.values()) if (!execution.lost) live += 1
      return live
    },
    beat,
    start() {
      timer ??= setInterval(() => void beat(), deps.heartbeatIntervalMs)
    },
    async stop() {
      if (timer !== undefined) clearInterval(timer)
      timer = undefined
      await Promise.all(inFlight.keys())
    },
  }
}

/**
 * The bounds of the lease keeper's own pool: a renewal, or the connection it needs, that takes
 * longer than two heartbeat intervals fails, so a renewal always times out before a lease can
 * expire (the interval is at most half the lease TTL); meanwhile the next beat has sent another.
 * It locks nothing it waits for (locked rows are skipped).
 */
export function renewalTimeouts(
  heartbeatIntervalMs: number,
  idleInTransactionTimeoutMs: number,
): LedgerTimeouts {
  return {
    statementTimeoutMs: heartbeatIntervalMs * 2,
    lockTimeoutMs: heartbeatIntervalMs,
    idleInTransactionTimeoutMs,
    connectTimeoutMs: heartbeatIntervalMs,
  }
}

/** Connections of the keeper's pool: the renewals that can be in flight within their bound. */
export const RENEWAL_POOL_SIZE = 3
