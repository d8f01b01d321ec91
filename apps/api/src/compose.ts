import {
  createApiMetrics,
  createTracing,
  type ApiMetrics,
  type Logger,
  type Tracing,
} from '@baton/observability'
import {
  createAttemptQueues,
  createRedisConnection,
  createSettlementListener,
  createSettlementPublisher,
  createWorkerCommandPublisher,
} from '@baton/queue'
import {
  countContinuations,
  createDb,
  namespaceArtifactBytes,
  type CreateDbOptions,
} from '@baton/store'
import { loadSubagentCatalog } from '@baton/subagents'
import type { FastifyInstance } from 'fastify'
import type { ApiConfig } from './config.ts'
import { createKeyResolver } from './http/caller.ts'
import { buildServer } from './server.ts'
import { createAdmission } from './services/admission.ts'
import { traceAdmission } from './services/admission-tracing.ts'
import { createAttemptCommands } from './services/attempt-commands.ts'
import { createDoorbell, createSettledDoorbell } from './services/bounded-wait.ts'
import { createHostedCommands } from './services/hosted-commands.ts'
import { claimKey, createRunCommands } from './services/run-commands.ts'

/** Observation hooks for tests; production passes none. */
export interface ApiOptions {
  /** Told each statement the API's pool ran (see `CreateDbOptions.onQuery`). */
  readonly onQuery?: CreateDbOptions['onQuery']
  /** Tracing to use instead of the config's (a test's in-memory exporter); the caller shuts it down. */
  readonly tracing?: Tracing
}

export interface ApiProcess {
  readonly app: FastifyInstance
  /** This process's metrics (also served at `/metrics`). */
  readonly metrics: ApiMetrics
  close(): Promise<void>
  isClosed(): boolean
}

/**
 * Builds the API with real connections: Postgres pool, Redis, the attempts queue, the worker-
 * command and settlement publishers, and the settlement listener that rings the doorbells of
 * bounded waits (by attempt) and bounded claims (by session).
 */
export async function composeApi(
  config: ApiConfig,
  logger: Logger,
  options: ApiOptions = {},
): Promise<ApiProcess> {
  // The same catalog the workers load, with the same rules: a name accepted here is a name a
  // worker starts, and a spec the fleet cannot run is refused here with its reason. Loaded before
  // any connection opens, so a bad spec directory stops the process with nothing to close.
  const subagents = await loadSubagentCatalog({
    ...(config.subagentsDir === undefined ? {} : { subagentsDir: config.subagentsDir }),
    ...(config.profilesFile === undefined ? {} : { profilesFile: config.profilesFile }),
    logger: logger.child({ component: 'subagents' }),
    scriptedEnabled: config.scriptedEnabled,
  })
  const tracing =
    options.tracing ?? createTracing({ service: 'baton-api', config: config.tracing, logger })
  const db = createDb({
    connectionString: config.databaseUrl,
    maxConnections: config.dbPoolSize,
    preparedStatements: config.dbPreparedStatements,
    applicationName: 'baton-api',
    timeouts: config.timeouts.ledger,
    onConnectionError: (error) =>
      logger.warn({ err: error }, 'postgres connection lost; reconnecting'),
    onQuery: options.onQuery,
  })
  // A pool of its own on the standby: the dashboard's reads are few and bounded.
  const dashboardDb =
    config.databaseReadUrl === undefined
      ? db
      : createDb({
          connectionString: config.databaseReadUrl,
          maxConnections: Math.min(config.dbPoolSize, 4),
          preparedStatements: config.dbPreparedStatements,
          applicationName: 'baton-api-dashboard',
          timeouts: config.timeouts.ledger,
          onConnectionError: (error) =>
            logger.warn({ err: error }, 'read replica connection lost; reconnecting'),
          onQuery: options.onQuery,
        })
  const redisTimeouts = config.timeouts.redis
  const redis = createRedisConnection(config.redisUrl, 'baton-api', {
    autoPipelining: true,
    timeouts: redisTimeouts,
    cluster: config.redisCluster,
  })
  // Where the queue partitions and the bell streams are: every Redis client below shares it.
  const placement = {
    redisUrl: config.redisUrl,
    prefix: config.queuePrefix,
    partitions: config.queuePartitions,
    cluster: config.redisCluster,
    timeouts: redisTimeouts,
  }
  const queues = createAttemptQueues({
    connection: redis,
    topology: {
      prefix: config.queuePrefix,
      partitions: config.queuePartitions,
      cluster: config.redisCluster,
    },
  })
  const workerCommands = createWorkerCommandPublisher(placement)
  const settlements = createSettlementPublisher(placement)
  const doorbell = createSettledDoorbell()
  // A session's bounded claims wait on its own key: a `claimable` ring wakes no other session's.
  const claimBell = createDoorbell<unknown>()
  const listener = createSettlementListener({
    ...placement,
    onEvent: (bell) => {
      if (bell.eventName === 'settled') doorbell.ring(bell.attemptId, bell.detail)
      else claimBell.ring(claimKey(bell.detail.namespaceId, bell.detail.sessionId))
    },
  })
  await listener.ready()
  const metrics = createApiMetrics(
    {
      queueJobs: () => queues.getJobCounts(),
      artifactBytes: () => namespaceArtifactBytes(db),
      continuations: () => countContinuations(db),
      onError: (source, error) => logger.warn({ err: error, source }, 'metrics source failed'),
    },
    { openWaits: () => doorbell.waiting },
  )
  const commands = createAttemptCommands({
    db,
    // One accept statement in flight: under load the next batch gathers behind it (see LEDGER_BATCH).
    admission: traceAdmission(
      createAdmission({ db, queues, logger, maxInFlight: 1, metrics }),
      tracing,
    ),
    doorbell,
    workerCommands,
    settlements,
    subagents,
    logger,
    metrics,
  })
  const keys = createKeyResolver(db, config.apiKeyCacheMs)
  const runs = createRunCommands({ db, claimBell, settlements, logger, metrics })
  const hosted = createHostedCommands({
    db,
    queues,
    doorbell,
    attempts: commands,
    subagents,
    logger,
  })
  const app = await buildServer({
    config,
    logger,
    db,
    dashboardDb,
    redis,
    queues,
    commands,
    keys,
    runs,
    hosted,
    metrics,
    tracing,
  })
  let closed = false
  return {
    app,
    metrics,
    isClosed: () => closed,
    async close() {
      await app.close()
      await listener.close()
      await workerCommands.close()
      await settlements.close()
      await queues.close()
      await db.destroy()
      if (dashboardDb !== db) await dashboardDb.destroy()
      redis.disconnect()
      // Last: the spans of the requests answered above are exported before the process exits.
      if (options.tracing === undefined) await tracing.shutdown()
      closed = true
    },
  }
}
