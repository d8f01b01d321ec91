import type { Logger, WorkerMetrics } from '@baton/observability'
import { isTransientStoreError, renewLeases, type Db } from '@baton/store'
import { ExecutionAbort, type AbortCause } from './execution-abort.ts'

/** One execution this worker owns: its fence and its abort controller. */
export interface OwnedExecution {
  readonly attemptId: string
  readonly ownerGeneration: number
  readonly signal: AbortSignal
  /** Set once a heartbeat confirmed the lease is gone: write nothing more. */
  readonly lost: boolean
  /**
   * Resolves when `lost` is set. The processor stops waiting for the child then: a child that
   * ignores its abort must not hold a shutdown that counts confirmed owner loss as drained.
   */
  readonly whenLost: Promise<void>
  abort(cause: AbortCause): void
  /** `performance.now()` when this worker took the execution (just after its claim). */
  readonly heldAt: number
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
  hold(attemptId: string, ownerGeneration: number): OwnedExecution
  release(attemptId: string): void
  get(attemptId: string): OwnedExecution | undefined
  /**
   * Aborts every owned execution with `cause`, and every execution held from now on (the start
   * barrier: a job claimed while shutting down never runs its child unaborted).
   */
  abortAll(cause: AbortCause): void
  readonly size: number
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
  readonly whenLost: Promise<void>
  #controller = new AbortController()
  #lost = false
  #resolveLost!: () => void
  #committing = false
  #cancelledAt: number | undefined

  constructor(attemptId: string, ownerGeneration: number) {
    this.attemptId = attemptId
    this.ownerGeneration = ownerGeneration
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
    this.#controller.abort(new ExecutionAbort(cause))
  }
}

/**
 * Renews every lease this worker holds with ONE statement per interval. A lease confirmed lost
 * aborts its child locally and marks the execution so nothing more is written; a pending cancel
 * request in the ledger aborts the child (the fallback for a missed cancel event). A transient
 * store error keeps local ownership: the next beat, one interval later, tries again.
 */
export function createLeaseKeeper(deps: {
  db: Db
  ownerId: string
  leaseTtlMs: number
  heartbeatIntervalMs: number
  logger: Logger
  /** Undelivered steering waits for an owned attempt (the fallback for a missed event). */
  onSteeringPending?: (attemptId: string) => void
  metrics?: Pick<WorkerMetrics, 'leaseRenewals' | 'leaseLosses'>
}): LeaseKeeper {
  const owned = new Map<string, HeldExecution>()
  let timer: NodeJS.Timeout | undefined
  let inFlight: Promise<void> | undefined
  let abortNewWith: AbortCause | undefined

  async function beatOnce(): Promise<void> {
    const leases = [...owned.values()].map((e) => ({
      attemptId: e.attemptId,
      ownerGeneration: e.ownerGeneration,
    }))
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
    deps.metrics?.leaseRenewals.inc(renewals.filter((r) => r.status === 'renewed').length)
    for (const renewal of renewals) {
      const execution = owned.get(renewal.attemptId)
      if (execution === undefined) continue
      if (renewal.status === 'lost' && execution.committing) {
        deps.logger.debug(
          { attemptId: renewal.attemptId },
          'renewal found the attempt no longer running while its commit is under way',
        )
      } else if (renewal.status === 'lost') {
        deps.logger.warn({ attemptId: renewal.attemptId }, 'lease lost; aborting child')
        execution.markLost()
        execution.abort('lease_lost')
        deps.metrics?.leaseLosses.inc()
      } else if (renewal.cancelRequested && !execution.signal.aborted) {
        deps.logger.info({ attemptId: renewal.attemptId }, 'cancel request found by heartbeat')
        execution.abort('cancelled')
      } else if (renewal.steeringPending) {
        deps.onSteeringPending?.(renewal.attemptId)
      }
    }
  }

  function beat(): Promise<void> {
    // One heartbeat in flight at a time; a slow store call delays the next beat, never doubles it.
    inFlight ??= beatOnce().finally(() => {
      inFlight = undefined
    })
    return inFlight
  }

  return {
    hold(attemptId, ownerGeneration) {
      const execution = new HeldExecution(attemptId, ownerGeneration)
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
    get size() {
      return owned.size
    },
    beat,
    start() {
      timer ??= setInterval(() => void beat(), deps.heartbeatIntervalMs)
    },
    async stop() {
      if (timer !== undefined) clearInterval(timer)
      timer = undefined
      await inFlight
    },
  }
}
