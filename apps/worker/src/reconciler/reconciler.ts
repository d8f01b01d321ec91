import type { Logger, WorkerMetrics } from '@baton/observability'
import {
  announceClaimable,
  announceSettled,
  ensureAttemptsEnqueued,
  type AttemptQueue,
  type SettlementPublisher,
} from '@baton/queue'
import {
  abandonExpiredRuns,
  claimableSessions,
  commitProcessLoss,
  expireArtifacts,
  findExpiredRunning,
  findStaleAccepted,
  movedDeliveries,
  reconcileDeliveries,
  type Db,
  type DeliveryOutcome,
} from '@baton/store'
import { observeReconcilePass } from '../ledger-metrics.ts'

export interface ReconcileReport {
  readonly processLost: number
  readonly requeued: number
  /** Continuation deliveries acknowledged, released, admitted or suppressed by this pass. */
  readonly deliveries: number
  /** Host runs whose lease expired, ended `abandoned` by this pass. */
  readonly abandoned: number
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

/**
 * Finishes what crashes and Redis losses leave behind, from the ledger's point of view:
 * - running attempts whose lease expired (owner dead) get the process-loss terminal outcome;
 * - accepted attempts older than `requeueAfterMs` whose job is gone are enqueued again;
 * - host runs whose lease expired end `abandoned`, releasing what they held
 *   (`abandonExpiredRuns`);
 * - continuation deliveries with something due, oldest first, are acknowledged, released,
 *   admitted or suppressed (`reconcileDeliveries`), and those pending longer than
 *   `unclaimedAfterMs` suppressed (`unclaimed`); each session where one became claimable gets its
 *   claim bell rung, which wakes that session's bounded claims in the API.
 * - one batch of artifacts past their retention deadline has its content deleted (see
 *   `expireArtifacts`: runners in many workers take disjoint batches).
 */
export function createReconciler(deps: {
  db: Db
  queue: AttemptQueue
  publisher: SettlementPublisher
  intervalMs: number
  requeueAfterMs: number
  /** How long a continuation may stay pending before it is suppressed `unclaimed`. */
  unclaimedAfterMs: number
  logger: Logger
  metrics?: WorkerMetrics
}): Reconciler {
  let timer: NodeJS.Timeout | undefined
  let inFlight: Promise<ReconcileReport> | undefined

  async function pass(): Promise<ReconcileReport> {
    const expired = await findExpiredRunning(deps.db, { limit: BATCH })
    const lost = await commitProcessLoss(deps.db, expired)
    for (const { attemptId, parentSession } of lost) {
      deps.logger.warn({ attemptId }, 'lease expired with its owner gone; recorded process loss')
      await announceSettled(deps.publisher, attemptId, deps.logger)
      if (parentSession !== undefined)
        await announceClaimable(deps.publisher, attemptId, parentSession, deps.logger)
    }
    const stale = await findStaleAccepted(deps.db, {
      olderThanMs: deps.requeueAfterMs,
      limit: BATCH,
    })
    const requeued = stale.length === 0 ? 0 : await ensureAttemptsEnqueued(deps.queue, stale)
    if (requeued > 0) deps.logger.warn({ requeued }, 'accepted attempts had no job; re-enqueued')
    const expiry = await expireArtifacts(deps.db, { limit: EXPIRY_BATCH })
    if (expiry.expired > 0) deps.logger.info(expiry, 'artifact retention ended; content deleted')
    const abandoned = await abandonExpiredRuns(deps.db, { limit: BATCH })
    for (const run of abandoned.runs)
      deps.logger.warn({ runId: run.id }, "run's lease expired; abandoned, what it held released")
    const swept = await reconcileDeliveries(deps.db, {
      due: true,
      limit: BATCH,
      unclaimedAfterMs: deps.unclaimedAfterMs,
    })
    const moved = await announceMoved([...abandoned.deliveries, ...swept])
    const report = { processLost: lost.length, requeued, expired: expiry.expired }
    observeReconcilePass(deps.metrics, { ...report, moved })
    return { ...report, deliveries: moved.length, abandoned: abandoned.runs.length }
  }

  /** Logs the deliveries that moved; rings the claim bell of each session they made claimable. */
  async function announceMoved(outcomes: readonly DeliveryOutcome[]): Promise<DeliveryOutcome[]> {
    const moved = movedDeliveries(outcomes)
    for (const { attemptId, action } of moved)
      deps.logger.info({ attemptId, action }, 'continuation delivery reconciled')
    for (const d of claimableSessions(moved))
      await announceClaimable(deps.publisher, d.attemptId, d, deps.logger)
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
