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

/**
 * Finishes what crashes and Redis losses leave behind, from the ledger's point of view:
 * - running attempts whose lease expired (owner dead) get the process-loss terminal outcome;
 * - accepted attempts older than `requeueAfterMs` whose job is gone are enqueued again;
 * - continuation deliveries with something due are retained, acknowledged, released, admitted or
 *   suppressed (`reconcileDeliveries`); one that became claimable rings its attempt's bell, which
 *   wakes the API's bounded claims.
 * - one batch of artifacts past their retention deadline has its content deleted (see
 *   `expireArtifacts`: runners in many workers take disjoint batches).
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
  let inFlight: Promise<ReconcileReport> | undefined

  async function pass(): Promise<ReconcileReport> {
    const expired = await findExpiredRunning(deps.db, { limit: BATCH })
    const lost = await commitProcessLoss(deps.db, expired)
    for (const attemptId of lost) {
      deps.logger.warn({ attemptId }, 'lease expired with its owner gone; recorded process loss')
      await announceSettled(deps.publisher, attemptId, deps.logger)
    }
    const stale = await findStaleAccepted(deps.db, {
      olderThanMs: deps.requeueAfterMs,
      limit: BATCH,
    })
    const requeued = stale.length === 0 ? 0 : await ensureAttemptsEnqueued(deps.queue, stale)
    if (requeued > 0) deps.logger.warn({ requeued }, 'accepted attempts had no job; re-enqueued')
    const expiry = await expireArtifacts(deps.db, { limit: EXPIRY_BATCH })
    if (expiry.expired > 0) deps.logger.info(expiry, 'artifact retention ended; content deleted')
    const moved = await reconcileContinuations()
    const report = { processLost: lost.length, requeued, expired: expiry.expired }
    observeReconcilePass(deps.metrics, { ...report, moved })
    return { ...report, deliveries: moved.length }
  }

  async function reconcileContinuations(): Promise<{ action: DeliveryAction }[]> {
    const actions = await reconcileDeliveries(deps.db, { due: true, limit: BATCH })
    const moved = actions.filter((a) => !UNMOVED.has(a.action))
    for (const { attemptId, action } of moved) {
      deps.logger.info({ attemptId, action }, 'continuation delivery reconciled')
      if (action === 'released' || action === 'admitted')
        await announceSettled(deps.publisher, attemptId, deps.logger)
    }
    return moved
  }

  function runOnce(): Promise<ReconcileReport> {
    inFlight ??= pass().finally(() => {
      inFlight = undefined
    })
    return inFlight
  }

  return {
    runOnce,
    start() {
      timer ??= setInterval(() => {
        runOnce().catch((error: unknown) =>
          deps.logger.warn({ err: error }, 'reconcile pass failed'),
        )
      }, deps.intervalMs)
    },
    async stop() {
      if (timer !== undefined) clearInterval(timer)
      timer = undefined
      await inFlight?.catch(() => undefined)
    },
  }
}
