import type { Logger, WorkerMetrics } from '@baton/observability'
import {
  announceSettled,
  ensureAttemptsEnqueued,
  type AttemptQueue,
  type SettlementPublisher,
} from '@baton/queue'
import {
  commitProcessLoss,
  expireArtifacts,
  findExpiredRunning,
  findStaleAccepted,
  reconcileDeliveries,
  type Db,
  type DeliveryAction,
} from '@baton/store'
import { observeReconcilePass } from '../ledger-metrics.ts'

export interface ReconcileReport {
  readonly processLost: number
  readonly requeued: number
  /** Continuation deliveries acknowledged, released, admitted or suppressed by this pass. */
  readonly deliveries: number
  /** Artifacts whose retention ended and whose content this pass deleted. */
  readonly expired: number
}

export interface Reconciler {
  /** One pass now. Safe to run in many workers at once: every write is guarded. */
  runOnce(): Promise<ReconcileReport>
  start(): void
  stop(): Promise<void>
}

const BATCH = 500
/** Artifacts expired per pass: their content is large, so fewer per transaction. */
const EXPIRY_BATCH = 100

/** Reconciliation answers that changed nothing (another reconciler may have decided instead). */
const UNMOVED: ReadonlySet<DeliveryAction> = new Set(['retained', 'busy', 'settled', 'missing'])

/** Most bells a reconciler keeps for Redis while it does not answer (the oldest go first). */
const MAX_PENDING_BELLS = 10_000

/**
 * Finishes what crashes and Redis losses leave behind, from the ledger's point of view:
 * - running attempts whose lease expired (owner dead) get the process-loss terminal outcome;
 * - accepted attempts older than `requeueAfterMs` whose job is gone are enqueued again;
 * - continuation deliveries with something due are retained, acknowledged, released, admitted or
 *   suppressed (`reconcileDeliveries`); one that became claimable rings its attempt's bell, which
 *   wakes the API's bounded claims.
 * - one batch of artifacts past their retention deadline has its content deleted (see
 *   `expireArtifacts`: runners in many workers take disjoint batches).
 *
 * A pass does its Postgres work first and never waits for Redis: the re-enqueue and the bells go
 * to a Redis lane of their own (one run at a time), so a Redis that stalls or is down stops
 * neither process-loss synthesis, nor artifact expiry, nor continuation reconciliation. Bells not
 * rung yet wait for the lane's next run, and every pass finds the stale accepted attempts again:
 * once Redis answers, the lane catches up.
 */
export function createReconciler(deps: {
  db: Db
  queue: AttemptQueue
  publisher: SettlementPublisher
  intervalMs: number
  requeueAfterMs: number
  logger: Logger
  metrics?: WorkerMetrics
}): Reconciler {
  let timer: NodeJS.Timeout | undefined
  let inFlight: Promise<LedgerReport> | undefined
  let redisInFlight: Promise<number> | undefined
  /** Attempts whose bell is still to ring, and the stale accepted attempts the last pass found. */
  const bells = new Set<string>()
  let stale: readonly string[] = []

  function ring(attemptId: string): void {
    bells.add(attemptId)
    if (bells.size > MAX_PENDING_BELLS) {
      const [oldest] = bells
      if (oldest !== undefined) bells.delete(oldest)
    }
  }

  async function ledgerPass(): Promise<LedgerReport> {
    const expired = await findExpiredRunning(deps.db, { limit: BATCH })
    const lost = await commitProcessLoss(deps.db, expired)
    for (const attemptId of lost) {
      deps.logger.warn({ attemptId }, 'lease expired with its owner gone; recorded process loss')
      ring(attemptId)
    }
    stale = await findStaleAccepted(deps.db, { olderThanMs: deps.requeueAfterMs, limit: BATCH })
    const expiry = await expireArtifacts(deps.db, { limit: EXPIRY_BATCH })
    if (expiry.expired > 0) deps.logger.info(expiry, 'artifact retention ended; content deleted')
    const moved = await reconcileContinuations()
    observeReconcilePass(deps.metrics, {
      processLost: lost.length,
      requeued: 0,
      expired: expiry.expired,
      moved,
    })
    return { processLost: lost.length, expired: expiry.expired, deliveries: moved.length }
  }

  async function reconcileContinuations(): Promise<{ action: DeliveryAction }[]> {
    const actions = await reconcileDeliveries(deps.db, { due: true, limit: BATCH })
    const moved = actions.filter((a) => !UNMOVED.has(a.action))
    for (const { attemptId, action } of moved) {
      deps.logger.info({ attemptId, action }, 'continuation delivery reconciled')
      if (action === 'released' || action === 'admitted') ring(attemptId)
    }
    return moved
  }

  /** The Redis lane: the bells kept so far, then the re-enqueue of the stale accepted attempts. */
  async function redisPass(): Promise<number> {
    // Together, so that the publisher puts them in a few entries; one Redis refused stays kept.
    await Promise.all(
      [...bells].map(async (attemptId) => {
        if (await announceSettled(deps.publisher, attemptId, deps.logger)) bells.delete(attemptId)
      }),
    )
    const waiting = stale
    stale = []
    if (waiting.length === 0) return 0
    const requeued = await ensureAttemptsEnqueued(deps.queue, waiting)
    if (requeued > 0) deps.logger.warn({ requeued }, 'accepted attempts had no job; re-enqueued')
    observeReconcilePass(deps.metrics, { processLost: 0, requeued, expired: 0, moved: [] })
    return requeued
  }

  function runLedger(): Promise<LedgerReport> {
    inFlight ??= ledgerPass().finally(() => {
      inFlight = undefined
    })
    return inFlight
  }

  function runRedis(): Promise<number> {
    redisInFlight ??= redisPass().finally(() => {
      redisInFlight = undefined
    })
    return redisInFlight
  }

  return {
    async runOnce() {
      const ledger = await runLedger()
      // A lane already under way (stuck on Redis, say) is waited for, then run again.
      await redisInFlight?.catch(() => undefined)
      const requeued = await runRedis()
      return { ...ledger, requeued }
    },
    start() {
      timer ??= setInterval(() => {
        runLedger()
          .catch((error: unknown) => deps.logger.warn({ err: error }, 'reconcile pass failed'))
          .finally(() => {
            if (redisInFlight !== undefined) return
            runRedis().catch((error: unknown) =>
              deps.logger.warn({ err: error }, 'reconcile pass: its Redis part failed'),
            )
          })
      }, deps.intervalMs)
    },
    async stop() {
      if (timer !== undefined) clearInterval(timer)
      timer = undefined
      await inFlight?.catch(() => undefined)
      await redisInFlight?.catch(() => undefined)
    },
  }
}

interface LedgerReport {
  readonly processLost: number
  readonly deliveries: number
  readonly expired: number
}
