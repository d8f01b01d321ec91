import type { Logger } from '@baton/observability'
import {
  createAttemptQueue,
  createCompletionDoorbell,
  createControlListener,
  createControlPublisher,
  createRedisConnection,
} from '@baton/queue'
import { createDb } from '@baton/store'
import { loadSubagentDirectory, subagentTransport, transportSteerable } from '@baton/subagents'
import type { FastifyInstance } from 'fastify'
import type { ApiConfig } from './config.ts'
import { buildServer } from './server.ts'
import { createAdmission } from './services/admission.ts'

export interface ApiProcess {
  readonly app: FastifyInstance
  close(): Promise<void>
  isClosed(): boolean
}

/**
 * Builds the API with real connections: Postgres pool, Redis, the attempts queue, the control
 * publisher, and the listener that rings the completion doorbell for bounded waits.
 */
export async function composeApi(config: ApiConfig, logger: Logger): Promise<ApiProcess> {
  const db = createDb({
    connectionString: config.databaseUrl,
    maxConnections: config.dbPoolSize,
    applicationName: 'baton-api',
    onConnectionError: (error) =>
      logger.warn({ err: error }, 'postgres connection lost; reconnecting'),
  })
  const redis = createRedisConnection(config.redisUrl, 'baton-api', { autoPipelining: true })
  const queue = createAttemptQueue({ connection: redis, prefix: config.queuePrefix })
  const publisher = createControlPublisher({ connection: redis, prefix: config.queuePrefix })
  const doorbell = createCompletionDoorbell()
  const listener = createControlListener({
    redisUrl: config.redisUrl,
    prefix: config.queuePrefix,
    onEvent: (event) => {
      if (event.eventName === 'terminal') doorbell.ring(event.attemptId)
    },
  })
  await listener.ready()
  const admission = createAdmission({ db, queue, logger, maxInFlight: 2 })
  const specs =
    config.subagentsDir === undefined ? [] : await loadSubagentDirectory(config.subagentsDir)
  const subagentNames = new Set(['scripted', ...specs.map((s) => s.name)])
  // The built-in scripted child and in-process (spawn) children accept steering; ACP agents do not.
  const steerableSubagents = new Set([
    'scripted',
    ...specs.filter((s) => transportSteerable(subagentTransport(s))).map((s) => s.name),
  ])
  const app = await buildServer({
    subagentNames,
    steerableSubagents,
    config,
    logger,
    db,
    redis,
    queue,
    publisher,
    doorbell,
    admission,
  })
  let closed = false
  return {
    app,
    isClosed: () => closed,
    async close() {
      await app.close()
      await listener.close()
      await publisher.close()
      await queue.close()
      await db.destroy()
      redis.disconnect()
      closed = true
    },
  }
}
