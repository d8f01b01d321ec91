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
  createAttemptQueues,
  createRedisConnection,
  createSettlementPublisher,
  createWorkerCommandListener,
  enqueueRouted,
  splitConcurrency,
  type StreamListener,
} from '@baton/queue'
import {
  createDb,
  ledgerMaintenanceGaps,
  startNextRun,
  type CreateDbOptions,
  type Db,
} from '@baton/store'
import type { WorkerConfig } from './config.ts'
import { RENEWAL_POOL_SIZE, createLeaseKeeper, renewalTimeouts } from './lease/lease-keeper.ts'
import { createClaimBatcher, createCommitBatcher } from './ledger-batchers.ts'
import { serveWorkerMetrics } from './metrics-endpoint.ts'
import { createSteeringDelivery } from './steering/steering-delivery.ts'
import { createOutputBudget } from './output-budget.ts'
import { createActiveJobs } from './processors/active-jobs.ts'
import { createAttemptProcessor } from './processors/attempt.processor.ts'
import { traceAttemptJobs, traceLedgerCalls } from './processors/attempt-tracing.ts'
import { createReconciler, type Reconciler } from './reconciler/reconciler.ts'
import { createCheckedShutdown } from './shutdown.ts'
import { builtInSubagents, type WorkerSubagents } from './subagents/subagent-catalog.ts'
import { createWebhookDelivery } from './webhooks/webhook-delivery.ts'

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
  const onConnectionError = (error: Error): void =>
    log.warn({ err: error }, 'postgres connection lost; reconnecting')
  const db = createDb({
    connectionString: config.databaseUrl,
    maxConnections: config.dbPoolSize,
    preparedStatements: config.dbPreparedStatements,
    applicationName: `baton-worker:${config.workerId}`,
    timeouts: config.timeouts.ledger,
    onConnectionError,
    onQuery: options.onQuery,
  })
  // Lease renewals run on a pool of their own, bounded by the heartbeat interval: neither a pool
  // busy with claims and commits nor a connection that stopped answering can hold a renewal back.
  const leaseDb = createDb({
    connectionString: config.databaseUrl,
    maxConnections: RENEWAL_POOL_SIZE,
    preparedStatements: config.dbPreparedStatements,
    applicationName: `baton-worker:${config.workerId}:leases`,
    timeouts: renewalTimeouts(
      config.heartbeatIntervalMs,
      config.timeouts.ledger.idleInTransactionTimeoutMs,
    ),
    onConnectionError,
    onQuery: options.onQuery,
  })
  const redisTimeouts = config.timeouts.redis
  const connection = createRedisConnection(config.redisUrl, `baton-worker:${config.workerId}`, {
    autoPipelining: true,
    timeouts: redisTimeouts,
    cluster: config.redisCluster,
  })
  const topology = {
    prefix: config.queuePrefix,
    partitions: config.queuePartitions,
    cluster: config.redisCluster,
  }
  // Where the bell streams are: the publisher and the listener share it.
  const placement = { ...topology, redisUrl: config.redisUrl, timeouts: redisTimeouts }
  const queues = createAttemptQueues({ connection, topology })
  subagents.bindHosted?.({ db, queues })
  const publisher = createSettlementPublisher(placement)
  const metrics = createWorkerMetrics({
    queueJobs: () => queues.getJobCounts(),
    onError: (source, error) => log.warn({ err: error, source }, 'metrics source failed'),
  })
  const steering = createSteeringDelivery({
    db,
    ownerId: config.workerId,
    logger: log.child({ component: 'steering' }),
  })
  const leaseKeeper = createLeaseKeeper({
    onSteeringPending: (attemptId) => void steering.deliver(attemptId),
    db: leaseDb,
    ownerId: config.workerId,
    leaseTtlMs: config.leaseTtlMs,
    heartbeatIntervalMs: config.heartbeatIntervalMs,
    logger: log.child({ component: 'lease-keeper' }),
    metrics,
  })
  const reconciler = createReconciler({
    db,
    queues,
    publisher,
    intervalMs: config.reconcileIntervalMs,
    requeueAfterMs: config.requeueAfterMs,
    unclaimedAfterMs: config.continuationUnclaimedMs,
    ledgerRetentionMs: config.ledgerRetentionMs,
    retentionBatch: config.ledgerRetentionBatch,
    retentionDutyPercent: config.ledgerRetentionDutyPercent,
    logger: log.child({ component: 'reconciler' }),
    metrics,
  })
  const webhooks = createWebhookDelivery({
    db,
    publisher,
    ownerId: config.workerId,
    config: config.webhooks,
    logger: log.child({ component: 'webhooks' }),
  })
  // Concurrent claims and commits of this worker share statements; one item the ledger refuses
  // fails alone, never its neighbours (see ledger-batchers.ts).
  const claims = createClaimBatcher(
    db,
    { ownerId: config.workerId, leaseTtlMs: config.leaseTtlMs },
    { metrics, runsHere: (attemptId) => leaseKeeper.get(attemptId) !== undefined },
  )
  const commits = createCommitBatcher(db, config.results, {
    metrics,
    timingOf: (attemptId) => leaseKeeper.get(attemptId),
  })
  const ledger = traceLedgerCalls(tracing, {
    claim: (attemptId) => claims.submit(attemptId),
    commit: (input) => commits.submit(input),
  })
  const activeJobs = createActiveJobs()
  const processor = createAttemptProcessor({
    db,
    ownerId: config.workerId,
    claim: ledger.claim,
    commit: ledger.commit,
    heartbeatIntervalMs: config.heartbeatIntervalMs,
    leaseTtlMs: config.leaseTtlMs,
    activeJobs,
    outputBudget: createOutputBudget(config.outputMemoryBudgetBytes),
    workspaceDir: config.workspaceDir,
    leaseKeeper,
    subagents,
    steering,
    publisher,
    logger: log.child({ component: 'attempt-processor' }),
    metrics,
    tracing,
    startNextRun: async (session) => {
      try {
        const started = await startNextRun(db, session)
        if (started !== undefined) await enqueueRouted(queues, [{ attemptId: started, ...session }])
      } catch (error) {
        // The reconciler's sweep starts it instead.
        log.warn({ err: error, ...session }, 'next hosted run not started; left to the reconciler')
      }
    },
  })
  const jobs = traceAttemptJobs(tracing, processor)
  // One BullMQ worker per queue partition, the process's concurrency split between them (see
  // `splitConcurrency`).
  const shares = splitConcurrency(config.concurrency, queues.partitions.length)
  const partitionWorkers = queues.partitions.map((queue, partition) => {
    const worker = new Worker<AttemptJob>(QueueName.Attempts, jobs, {
      // The auto-pipelined connection of the queue and the bells: the moves, lock renewals and
      // bells of jobs that finish in one tick (a commit batch settles many at once) leave in one
      // write. BullMQ blocks for new jobs on a duplicate of its own (one per partition).
      connection,
      prefix: queue.opts.prefix as string,
      concurrency: shares[partition] as number,
      autorun: false,
      // A job held by a dead worker is redelivered about when its lease would expire, not after
      // BullMQ's default 30 s; redelivery is harmless (the claim acknowledges held and terminal
      // attempts, and records process loss for orphaned ones), so it may happen any number of
      // times.
      lockDuration: config.leaseTtlMs,
      stalledInterval: config.leaseTtlMs,
      maxStalledCount: 1_000,
    })
    worker.on('error', (error) => log.warn({ err: error, partition }, 'queue worker error'))
    worker.on('failed', (job, error) =>
      log.warn({ err: error, jobId: job?.id }, 'attempt job failed'),
    )
    return worker
  })
  /** The partition workers as one. */
  const worker = {
    close: async (force?: boolean) => {
      await Promise.all(partitionWorkers.map((w) => w.close(force)))
    },
    /** True when the job was held here (only one partition can hold it). */
    cancelJob: (jobId: string, reason: string) =>
      partitionWorkers.some((w) => w.cancelJob(jobId, reason)),
    cancelAllJobs: (reason: string) => {
      for (const w of partitionWorkers) w.cancelAllJobs(reason)
    },
    run: () => Promise.all(partitionWorkers.map((w) => w.run())),
    waitUntilReady: () => Promise.all(partitionWorkers.map((w) => w.waitUntilReady())),
  }

  let listener: StreamListener | undefined
  let metricsServer: MetricsServer | undefined
  let stopped = false
  let starting: Promise<void> | undefined
  /** Set by the first shutdown call: a start still under way stops where it is. */
  const stopRequested = new AbortController()

  /**
   * Closes everything, each part in turn, none waited for past `deadline`: a part still closing
   * then (a connection to a dependency that stopped answering) is left behind, and named.
   */
  async function closeAll(deadline: AbortSignal): Promise<string[]> {
    const left: string[] = []
    const close = async (part: string, closing: () => Promise<unknown> | undefined) => {
      const done = Promise.resolve()
        .then(closing)
        .then(
          () => true,
          (error: unknown) => {
            log.warn({ err: error, part }, 'closing failed')
            return true
          },
        )
      if (!(await untilAborted(done, deadline))) left.push(part)
    }
    await close('metrics endpoint', () => metricsServer?.close())
    await close('reconciler', () => reconciler.stop())
    await close('webhook delivery', () => webhooks.stop())
    await close('lease keeper', () => leaseKeeper.stop())
    await close('worker-command listener', () => listener?.close())
    // Heartbeats and steer events (both closed now) started deliveries without waiting for them.
    await close('steering marks', () => steering.drain())
    await close('attempt queue', () => queues.close())
    await close('settlement publisher', () => publisher.close())
    await close('queue worker', () => worker.close(true))
    await close('ledger pools', () => Promise.all([db.destroy(), leaseDb.destroy()]))
    connection.disconnect()
    // Last: the spans of the attempts drained above are exported before the process exits.
    if (options.tracing === undefined) await close('tracing', () => tracing.shutdown())
    stopped = true
    return left
  }

  const checkedShutdown = createCheckedShutdown({
    // Stops fetching; drained once every job ended or only waits for a child whose lease was
    // confirmed lost (such a job keeps its slot; force-closing the worker leaves it behind).
    stopAdmission: () => Promise.race([worker.close(), activeJobs.drained()]),
    abortOwned() {
      // Abort owned children with the shutdown cause first (first abort wins), then the jobs.
      leaseKeeper.abortAll('shutdown')
      worker.cancelAllJobs('shutdown')
    },
    owned: () => leaseKeeper.size,
    ownedAttempts: () => leaseKeeper.ownedAttempts(),
    reconcileOnce: () => reconciler.runOnce(),
    closeAll,
    logger: log,
  })

  return {
    workerId: config.workerId,
    db,
    reconciler,
    metrics,
    start() {
      starting ??= startParts()
      return starting
    },
    isStopped: () => stopped,
    async shutdownChecked(deadlineMs, signal) {
      stopRequested.abort()
      // A start under way stops at its next step: nothing it opens is left unclosed.
      await starting?.catch(() => undefined)
      return checkedShutdown(deadlineMs, signal)
    },
  }

  async function startParts(): Promise<void> {
    const stop = stopRequested.signal
    if (stop.aborted) return
    metricsServer = await serveWorkerMetrics(config, metrics, log)
    if (stop.aborted) return
    listener = createWorkerCommandListener({
      ...placement,
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
    if (!(await untilAborted(listener.ready(), stop))) return
    leaseKeeper.start()
    reconciler.start()
    webhooks.start()
    void worker.run().catch((error: unknown) => log.error({ err: error }, 'queue worker stopped'))
    if (!(await untilAborted(worker.waitUntilReady(), stop))) return
    await untilAborted(warnOfLedgerMaintenance(db, log), stop)
    if (stop.aborted) return
    log.info({ concurrency: config.concurrency }, WORKER_READY_MESSAGE)
  }
}

/** Waits for `work` unless `signal` fires first: true when it settled, false when abandoned. */
async function untilAborted(work: Promise<unknown>, signal: AbortSignal): Promise<boolean> {
  if (signal.aborted) return false
  let onAbort: (() => void) | undefined
  const aborted = new Promise<false>((resolve) => {
    onAbort = () => resolve(false)
    signal.addEventListener('abort', onAbort, { once: true })
  })
  try {
    return await Promise.race([work.then(() => true), aborted])
  } finally {
    if (onAbort !== undefined) signal.removeEventListener('abort', onAbort)
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
