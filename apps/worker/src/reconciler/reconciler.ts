import { setTimeout as sleep } from 'node:timers/promises'
import type { Logger, WorkerMetrics } from '@baton/observability'
import {
  announceClaimable,
  announceSettled,
  ensureRoutedEnqueued,
  type AttemptQueues,
  type SettlementPublisher,
} from '@baton/queue'
import type { ClaimableDetail } from '@baton/contracts'
import {
  abandonExpiredRuns,
  claimableSessions,
  commitProcessLoss,
  expireArtifacts,
  findExpiredRunning,
  findStaleAccepted,
  idleHostedSessions,
  movedDeliveries,
  reconcileDeliveries,
  startNextRun,
  removeExpiredHistory,
  type Db,
  type DeliveryOutcome,
  type RetentionCursor,
  type StaleAccepted,
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
  /** Attempts removed with their history by ledger retention in this pass. */
  readonly removed: number
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
/** Most bells a reconciler keeps for Redis while it does not answer (the oldest go first). */
const MAX_PENDING_BELLS = 10_000

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
 *   `expireArtifacts`: runners in many workers take disjoint batches);
 * - history past the ledger retention is removed (`removeExpiredHistory`: finished agents with
 *   their attempts, transitions and agent history, concluded continuations, ended runs; never a
 *   row a claim needs), in a lane of its own: batch after batch of at most `retentionBatch` rows
 *   per namespace, each its own statement and transaction, until a batch of every namespace
 *   comes back short. A backlog (a long ledger's first retention, a shortened setting) drains in
 *   one run of that lane, while the ledger passes go on beside it; between two batches it holds
 *   nothing and rests (`retentionDutyPercent`), so claims and commits neither wait for the
 *   backlog nor share the database with it more than that. One batch runs at a time in the
 *   fleet: a lane that finds another worker's batch under way ends until its next pass.
 *
 * A pass does its Postgres work first and never waits for Redis: the re-enqueue and the bells go
 * to a Redis lane of their own (one run at a time), so a Redis that stalls or is down stops
 * neither process-loss synthesis, nor artifact expiry, nor continuation reconciliation. Bells not
 * rung yet wait for the lane's next run, and every pass finds the stale accepted attempts again:
 * once Redis answers, the lane catches up.
 */
export function createReconciler(deps: {
  db: Db
  queues: AttemptQueues
  publisher: SettlementPublisher
  intervalMs: number
  requeueAfterMs: number
  /** How long a continuation may stay pending before it is suppressed `unclaimed`. */
  unclaimedAfterMs: number
  /** The default ledger retention (a namespace's own setting wins). */
  ledgerRetentionMs: number
  /** Rows of history each namespace's retention batch looks at (one statement). */
  retentionBatch: number
  /** The share of its time (percent) the retention lane spends in batches; it rests the rest. */
  retentionDutyPercent: number
  logger: Logger
  metrics?: WorkerMetrics
}): Reconciler {
  let timer: NodeJS.Timeout | undefined
  let inFlight: Promise<LedgerReport> | undefined
  let redisInFlight: Promise<number> | undefined
  let retentionInFlight: Promise<number> | undefined
  let stopping = false
  /** Cuts the retention lane's rest short when the reconciler stops. */
  const stopped = new AbortController()
  /** Bells still to ring (settled, or claimable for a session), by attempt and kind. */
  const bells = new Map<string, () => Promise<boolean>>()
  /** The stale accepted attempts the last pass found. */
  let stale: readonly StaleAccepted[] = []
  /** Where the next retention batch goes on (see `removeExpiredHistory`). */
  let retention: { agentCursor?: RetentionCursor; runCursor?: RetentionCursor } = {}

  function ring(key: string, bell: () => Promise<boolean>): void {
    bells.set(key, bell)
    if (bells.size > MAX_PENDING_BELLS) {
      const [oldest] = bells.keys()
      if (oldest !== undefined) bells.delete(oldest)
    }
  }
  const ringSettled = (attemptId: string): void =>
    ring(`settled:${attemptId}`, () => announceSettled(deps.publisher, attemptId, deps.logger))
  const ringClaimable = (attemptId: string, session: ClaimableDetail): void =>
    ring(`claimable:${attemptId}`, () =>
      announceClaimable(deps.publisher, attemptId, session, deps.logger),
    )

  async function ledgerPass(): Promise<LedgerReport> {
    const expired = await findExpiredRunning(deps.db, { limit: BATCH })
    const lost = await commitProcessLoss(deps.db, expired)
    for (const { attemptId, parentSession } of lost) {
      deps.logger.warn({ attemptId }, 'lease expired with its owner gone; recorded process loss')
      ringSettled(attemptId)
      if (parentSession !== undefined) ringClaimable(attemptId, parentSession)
    }
    stale = await findStaleAccepted(deps.db, { olderThanMs: deps.requeueAfterMs, limit: BATCH })
    // Hosted sessions left idle with a run queued (their last run lost its process, or the
    // worker that ended it did not start the next): the next run starts, and is enqueued below.
    for (const session of await idleHostedSessions(deps.db, BATCH)) {
      const started = await startNextRun(deps.db, session)
      if (started !== undefined) stale = [...stale, { attemptId: started, ...session }]
    }
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
    const moved = announceMoved([...abandoned.deliveries, ...swept])
    const report = { processLost: lost.length, expired: expiry.expired, removed: 0 }
    observeReconcilePass(deps.metrics, { ...report, requeued: 0, moved })
    return { ...report, deliveries: moved.length, abandoned: abandoned.runs.length }
  }

  /**
   * The retention lane: batches until every namespace's batch came back short (its cursor ends),
   * or the reconciler stops. Each batch is counted as it commits, so a long drain shows progress.
   */
  async function retentionPass(): Promise<number> {
    let removed = 0
    for (;;) {
      const started = performance.now()
      const batch = await removeExpiredHistory(deps.db, {
        defaultRetentionMs: deps.ledgerRetentionMs,
        limit: deps.retentionBatch,
        ...retention,
      })
      retention = { agentCursor: batch.agentCursor, runCursor: batch.runCursor }
      removed += batch.attempts
      if (batch.attempts + batch.runs > 0) {
        const { attempts, agents, runs } = batch
        deps.logger.info({ attempts, agents, runs }, 'ledger retention removed old history')
      }
      observeReconcilePass(deps.metrics, {
        processLost: 0,
        requeued: 0,
        expired: 0,
        removed: batch.attempts,
        moved: [],
      })
      if (stopping || (batch.agentCursor.size === 0 && batch.runCursor.size === 0)) return removed
      // Paced: the lane rests so that batches take `retentionDutyPercent` of its time.
      const restMs = (performance.now() - started) * (100 / deps.retentionDutyPercent - 1)
      try {
        await sleep(restMs, undefined, { signal: stopped.signal })
      } catch {
        return removed
      }
    }
  }

  /** Logs the deliveries that moved; rings the claim bell of each session they made claimable. */
  function announceMoved(outcomes: readonly DeliveryOutcome[]): DeliveryOutcome[] {
    const moved = movedDeliveries(outcomes)
    for (const { attemptId, action } of moved)
      deps.logger.info({ attemptId, action }, 'continuation delivery reconciled')
    for (const d of claimableSessions(moved)) ringClaimable(d.attemptId, d)
    return moved
  }

  /** The Redis lane: the bells kept so far, then the re-enqueue of the stale accepted attempts. */
  async function redisPass(): Promise<number> {
    // Together, so that the publisher puts them in a few entries; one Redis refused stays kept.
    await Promise.all(
      [...bells].map(async ([key, bell]) => {
        if (await bell()) bells.delete(key)
      }),
    )
    const waiting = stale
    stale = []
    if (waiting.length === 0) return 0
    // Each into its own session's partition.
    const requeued = await ensureRoutedEnqueued(deps.queues, waiting)
    if (requeued > 0) deps.logger.warn({ requeued }, 'accepted attempts had no job; re-enqueued')
    observeReconcilePass(deps.metrics, {
      processLost: 0,
      requeued,
      expired: 0,
      removed: 0,
      moved: [],
    })
    return requeued
  }

  function runLedger(): Promise<LedgerReport> {
    const started = performance.now()
    inFlight ??= ledgerPass().finally(() => {
      deps.metrics?.reconcilePassSeconds.observe((performance.now() - started) / 1000)
      inFlight = undefined
    })
    return inFlight
  }

  function runRetention(): Promise<number> {
    retentionInFlight ??= retentionPass().finally(() => {
      retentionInFlight = undefined
    })
    return retentionInFlight
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
      // A lane already under way (stuck on Redis, a long drain) is waited for, then run again.
      await retentionInFlight?.catch(() => undefined)
      const removed = await runRetention()
      await redisInFlight?.catch(() => undefined)
      const requeued = await runRedis()
      return { ...ledger, removed, requeued }
    },
    start() {
      timer ??= setInterval(() => {
        runLedger()
          .catch((error: unknown) => deps.logger.warn({ err: error }, 'reconcile pass failed'))
          .finally(() => {
            if (retentionInFlight === undefined)
              runRetention().catch((error: unknown) =>
                deps.logger.warn({ err: error }, 'reconcile pass: ledger retention failed'),
              )
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
      stopping = true
      stopped.abort()
      await inFlight?.catch(() => undefined)
      await retentionInFlight?.catch(() => undefined)
      await redisInFlight?.catch(() => undefined)
    },
  }
}

type LedgerReport = Omit<ReconcileReport, 'requeued'>
