import { QueueName, type AttemptJob } from '@baton/contracts'
import { Worker } from 'bullmq'
import {
  WORKER_READY_MESSAGE,
  createTracing,
  createWorkerMetrics,
  type Logger,
  type MetricsServer,
  type Tracing,
  type WorkerMetrics,
} from '@baton/observability'
import {
  createAttemptQueue,
  createRedisConnection,
  createSettlementPublisher,
  createWorkerCommandListener,
  type StreamListener,
} from '@baton/queue'
import { createDb, ledgerMaintenanceGaps, type CreateDbOptions, type Db } from '@baton/store'
import type { WorkerConfig } from './config.ts'
import { createLeaseKeeper } from './lease/lease-keeper.ts'
import { createClaimBatcher, createCommitBatcher } from './ledger-batchers.ts'
import { serveWorkerMetrics } from './metrics-endpoint.ts'
import { createSteeringDelivery } from './steering/steering-delivery.ts'
import { createOutputBudget } from './output-budget.ts'
import { createAttemptProcessor } from './processors/attempt.processor.ts'
import { traceAttemptJobs, traceLedgerCalls } from './processors/attempt-tracing.ts'
import { createReconciler, type Reconciler } from './reconciler/reconciler.ts'
import { createCheckedShutdown } from './shutdown.ts'
import { builtInSubagents, type WorkerSubagents } from './subagents/subagent-catalog.ts'

export interface WorkerRuntime {
  readonly workerId: string
  readonly db: Db
  readonly reconciler: Reconciler
  /** This worker's metrics (its own registry), served on `METRICS_PORT` once started. */
  readonly metrics: WorkerMetrics
  /** Resolves when the worker consumes jobs and listens for worker commands. */
  start(): Promise<void>
  /**
   * Stop admission, abort every owned child (they commit `aborted`), wait for them under one
   * deadline, reconcile, close. On `ShutdownDeadlineError` ownership is kept: call it again.
   */
  shutdownChecked(deadlineMs: number, signal?: AbortSignal): Promise<void>
  /** True once a shutdown finished closing every connection. */
  isStopped(): boolean
}

/** Observation hooks for tests; production passes none. */
export interface WorkerRuntimeOptions {
  /** Told each statement the worker's pool ran (see `CreateDbOptions.onQuery`). */
  readonly onQuery?: CreateDbOptions['onQuery']
  /** Tracing to use instead of the config's (a test's in-memory exporter); the caller shuts it down. */
  readonly tracing?: Tracing
}

/**
 * Composes one worker process: a BullMQ worker on `attempts`, the lease keeper, the worker-command
 * listener (cancel → `worker.cancelJob`), and the reconciler.
 */
export function createWorkerRuntime(
  config: WorkerConfig,
  logger: Logger,
  subagents: WorkerSubagents = builtInSubagents(),
  options: WorkerRuntimeOptions = {},
): WorkerRuntime {
  const log = logger.child({ workerId: config.workerId })
  const tracing =
    options.tracing ??
    createTracing({ service: 'baton-worker', config: config.tracing, logger: log })
  const db = createDb({
    connectionString: config.databaseUrl,
    maxConnections: config.dbPoolSize,
    preparedStatements: config.dbPreparedStatements,
    applicationName: `baton-worker:${config.workerId}`,
    onConnectionError: (error) =>
      log.warn({ err: error }, 'postgres connection lost; reconnecting'),
    onQuery: options.onQuery,
  })
  const connection = createRedisConnection(config.redisUrl, `baton-worker:${config.workerId}`, {
    autoPipelining: true,
  })
  const queue = createAttemptQueue({ connection, prefix: config.queuePrefix })
  const publisher = createSettlementPublisher({
    redisUrl: config.redisUrl,
    prefix: config.queuePrefix,
  })
  const metrics = createWorkerMetrics({
    queueJobs: () => queue.getJobCounts(),
    onError: (source, error) => log.warn({ err: error, source }, 'metrics source failed'),
  })
  const steering = createSteeringDelivery({
    db,
    ownerId: config.workerId,
    logger: log.child({ component: 'steering' }),
  })
  const leaseKeeper = createLeaseKeeper({
    onSteeringPending: (attemptId) => void steering.deliver(attemptId),
    db,
    ownerId: config.workerId,
    leaseTtlMs: config.leaseTtlMs,
    heartbeatIntervalMs: config.heartbeatIntervalMs,
    logger: log.child({ component: 'lease-keeper' }),
    metrics,
  })
  const reconciler = createReconciler({
    db,
    queue,
    publisher,
    intervalMs: config.reconcileIntervalMs,
    requeueAfterMs: config.requeueAfterMs,
    unclaimedAfterMs: config.continuationUnclaimedMs,
    logger: log.child({ component: 'reconciler' }),
    metrics,
  })
  // Concurrent claims and commits of this worker share statements; one item the ledger refuses
  // fails alone, never its neighbours (see ledger-batchers.ts).
  const claims = createClaimBatcher(
    db,
    { ownerId: config.workerId, leaseTtlMs: config.leaseTtlMs },
    metrics,
  )
  const commits = createCommitBatcher(db, config.results, {
    metrics,
    timingOf: (attemptId) => leaseKeeper.get(attemptId),
  })
  const ledger = traceLedgerCalls(tracing, {
    claim: (attemptId) => claims.submit(attemptId),
    commit: (input) => commits.submit(input),
  })
  const processor = createAttemptProcessor({
    db,
    ownerId: config.workerId,
    claim: ledger.claim,
    commit: ledger.commit,
    heartbeatIntervalMs: config.heartbeatIntervalMs,
    outputBudget: createOutputBudget(config.outputMemoryBudgetBytes),
    workspaceDir: config.workspaceDir,
    leaseKeeper,
    subagents,
    steering,
    publisher,
    logger: log.child({ component: 'attempt-processor' }),
    metrics,
    tracing,
  })
  const worker = new Worker<AttemptJob>(QueueName.Attempts, traceAttemptJobs(tracing, processor), {
    // The auto-pipelined connection of the queue and the bells: the moves, lock renewals and bells
    // of jobs that finish in one tick (a commit batch settles many at once) leave in one write.
    // BullMQ blocks for new jobs on a duplicate of its own.
    connection,
    prefix: config.queuePrefix,
    concurrency: config.concurrency,
    autorun: false,
    // A job held by a dead worker is redelivered about when its lease would expire, not after
    // BullMQ's default 30 s; redelivery is harmless (the claim acknowledges held and terminal
    // attempts, and records process loss for orphaned ones), so it may happen any number of times.
    lockDuration: config.leaseTtlMs,
    stalledInterval: config.leaseTtlMs,
    maxStalledCount: 1_000,
  })
  worker.on('error', (error) => log.warn({ err: error }, 'queue worker error'))
  worker.on('failed', (job, error) =>
    log.warn({ err: error, jobId: job?.id }, 'attempt job failed'),
  )

  let listener: StreamListener | undefined
  let metricsServer: MetricsServer | undefined
  let stopped = false

  async function closeAll(): Promise<void> {
    await metricsServer?.close()
    await reconciler.stop()
    await leaseKeeper.stop()
    await listener?.close()
    // Heartbeats and steer events (both closed now) started deliveries without waiting for them.
    await steering.drain()
    await queue.close()
    await publisher.close()
    await worker.close(true)
    await db.destroy()
    connection.disconnect()
    // Last: the spans of the attempts drained above are exported before the process exits.
    if (options.tracing === undefined) await tracing.shutdown()
    stopped = true
  }

  const shutdownChecked = createCheckedShutdown({
    stopAdmission: () => worker.close(), // stops fetching; resolves when active jobs finish
    abortOwned() {
      // Abort owned children with the shutdown cause first (first abort wins), then the jobs.
      leaseKeeper.abortAll('shutdown')
      worker.cancelAllJobs('shutdown')
    },
    owned: () => leaseKeeper.size,
    reconcileOnce: () => reconciler.runOnce(),
    closeAll,
    logger: log,
  })

  return {
    workerId: config.workerId,
    db,
    reconciler,
    metrics,
    async start() {
      metricsServer = await serveWorkerMetrics(config, metrics, log)
      listener = createWorkerCommandListener({
        redisUrl: config.redisUrl,
        prefix: config.queuePrefix,
        onEvent: (event) => {
          if (event.eventName === 'cancel') {
            // Only the worker holding the job has it: everyone else returns false.
            const delivered = worker.cancelJob(event.attemptId, 'cancelled')
            log.debug({ attemptId: event.attemptId, delivered }, 'cancel event received')
          } else if (event.eventName === 'steer') {
            void steering.deliver(event.attemptId)
          }
        },
      })
      await listener.ready()
      leaseKeeper.start()
      reconciler.start()
      void worker.run().catch((error: unknown) => log.error({ err: error }, 'queue worker stopped'))
      await worker.waitUntilReady()
      await warnOfLedgerMaintenance(db, log)
      log.info({ concurrency: config.concurrency }, WORKER_READY_MESSAGE)
    },
    isStopped: () => stopped,
    shutdownChecked,
  }
}

/**
 * A ledger Postgres does not maintain still works, slower as attempts accumulate (see
 * `ledgerMaintenanceGaps`): say so once, at start, one warning per reason.
 */
async function warnOfLedgerMaintenance(db: Db, log: Logger): Promise<void> {
  try {
    for (const gap of await ledgerMaintenanceGaps(db)) {
      log.warn({ gap }, LEDGER_NOT_MAINTAINED_MESSAGE)
    }
  } catch (error) {
    log.warn({ err: error }, 'could not read whether Postgres maintains the ledger')
  }
}

export const LEDGER_NOT_MAINTAINED_MESSAGE =
  'Postgres does not maintain the ledger: its statistics go stale and dead rows pile up, so ledger statements slow down as attempts accumulate; turn autovacuum on (see the README requirements)'
