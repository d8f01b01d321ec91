import type { TestProject } from 'vitest/node'
import { Redis } from 'ioredis'
import pg from 'pg'
import { createDb, migrateToLatest, partitionLedgerByHash } from '@baton/store'

/**
 * Once per integration run: find real Postgres and Redis, migrate a template database, and hand
 * both to the test files. Every test file then clones its own database from the template (fast,
 * and isolated). Services come from, in order: REDIS_URL/DATABASE_URL when set; the local services
 * on their default ports when they answer (the same defaults as `npm run up`); testcontainers
 * where Docker exists; otherwise a clear error.
 */
declare module 'vitest' {
  export interface ProvidedContext {
    databaseUrl: string
    redisUrl: string
    templateDatabase: string
    /**
     * Set by the `integration-pgbouncer` project: the maintenance database through PgBouncer in
     * transaction mode, whose host and port the apps of each test file then use.
     */
    pooledDatabaseUrl?: string
  }
}

/** The local defaults `npm run up` uses, with the maintenance database to create others from. */
export const LOCAL_DATABASE_URL = 'postgres://postgres@127.0.0.1:5432/postgres'
export const LOCAL_REDIS_URL = 'redis://127.0.0.1:6379'

export default function setup(project: TestProject): Promise<() => Promise<void>> {
  return setupLedger(project, 'plain')
}

/**
 * The ledger the template holds: the migrated schema, or the same rebuilt with every distributed
 * table hash-partitioned on its distribution column (`partitionLedgerByHash`: the variant whose
 * key rule is a sharding extension's).
 */
export type LedgerVariant = 'plain' | 'hash-partitioned'

export async function setupLedger(
  project: TestProject,
  variant: LedgerVariant,
): Promise<() => Promise<void>> {
  const stops: (() => Promise<unknown>)[] = []
  let databaseUrl = process.env.DATABASE_URL
  let redisUrl = process.env.REDIS_URL
  if (databaseUrl === undefined && (await postgresAnswers(LOCAL_DATABASE_URL)))
    databaseUrl = LOCAL_DATABASE_URL
  if (redisUrl === undefined && (await redisAnswers(LOCAL_REDIS_URL))) redisUrl = LOCAL_REDIS_URL
  if (databaseUrl === undefined || redisUrl === undefined) {
    const started = await startContainers()
    databaseUrl ??= started.databaseUrl
    redisUrl ??= started.redisUrl
    stops.push(...started.stops)
  }
  // A template of this run's and this project's own, so that concurrent runs (several checkouts)
  // and the projects of one run never drop it under each other.
  const template = `baton_test_template_${process.pid}_${project.name.replace(/[^a-z0-9]/g, '_')}`

  const admin = new pg.Client({ connectionString: databaseUrl })
  await admin.connect()
  try {
    await admin.query(`drop database if exists ${template} with (force)`)
    await admin.query(`create database ${template}`)
  } finally {
    await admin.end()
  }
  const db = createDb({ connectionString: withDatabase(databaseUrl, template), maxConnections: 1 })
  try {
    await migrateToLatest(db)
    if (variant === 'hash-partitioned') await partitionLedgerByHash(db)
  } finally {
    await db.destroy()
  }

  project.provide('databaseUrl', databaseUrl)
  project.provide('redisUrl', redisUrl)
  project.provide('templateDatabase', template)
  const rootUrl = databaseUrl
  return async () => {
    const cleanup = new pg.Client({ connectionString: rootUrl })
    await cleanup.connect()
    try {
      await cleanup.query(`drop database if exists ${template} with (force)`)
    } finally {
      await cleanup.end()
    }
    for (const stop of stops) await stop()
  }
}

/** Whether a Postgres (or a pooler in front of one) at `url` answers a query. */
export async function postgresAnswers(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2_000 })
  client.on('error', () => undefined)
  try {
    await client.connect()
    await client.query('select 1')
    return true
  } catch {
    return false
  } finally {
    await client.end().catch(() => undefined)
  }
}

async function redisAnswers(url: string): Promise<boolean> {
  const redis = new Redis(url, {
    lazyConnect: true,
    connectTimeout: 2_000,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  })
  redis.on('error', () => undefined)
  try {
    await redis.connect()
    return (await redis.ping()) === 'PONG'
  } catch {
    return false
  } finally {
    redis.disconnect()
  }
}

export function withDatabase(url: string, database: string): string {
  const u = new URL(url)
  u.pathname = `/${database}`
  return u.toString()
}

async function startContainers(): Promise<{
  databaseUrl: string
  redisUrl: string
  stops: (() => Promise<unknown>)[]
}> {
  try {
    const { PostgreSqlContainer } = await import('@testcontainers/postgresql')
    const { RedisContainer } = await import('@testcontainers/redis')
    const postgres = await new PostgreSqlContainer('postgres:16-alpine').start()
    const redis = await new RedisContainer('redis:7-alpine').start()
    return {
      databaseUrl: postgres.getConnectionUri(),
      redisUrl: redis.getConnectionUrl(),
      stops: [() => postgres.stop(), () => redis.stop()],
    }
  } catch (error) {
    throw new Error(
      'Integration tests need Postgres and Redis: none answered on the default local ports ' +
        `(${LOCAL_DATABASE_URL}, ${LOCAL_REDIS_URL}) and Docker is not available for ` +
        'testcontainers. Start them (see the README, Requirements) or set DATABASE_URL and REDIS_URL.',
      { cause: error },
    )
  }
}
