import type { TestProject } from 'vitest/node'
import pg from 'pg'
import { createDb, migrateToLatest } from '@baton/store'

/**
 * Once per integration run: find real Postgres and Redis (REDIS_URL/DATABASE_URL when set, else
 * testcontainers where Docker exists), migrate a template database, and hand both to the test files.
 * Every test file then clones its own database from the template (fast, and isolated).
 */
declare module 'vitest' {
  export interface ProvidedContext {
    databaseUrl: string
    redisUrl: string
    templateDatabase: string
  }
}

const TEMPLATE = 'baton_test_template'

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const stops: (() => Promise<unknown>)[] = []
  let databaseUrl = process.env.DATABASE_URL
  let redisUrl = process.env.REDIS_URL
  if (databaseUrl === undefined || redisUrl === undefined) {
    const started = await startContainers()
    databaseUrl ??= started.databaseUrl
    redisUrl ??= started.redisUrl
    stops.push(...started.stops)
  }

  const admin = new pg.Client({ connectionString: databaseUrl })
  await admin.connect()
  try {
    await admin.query(`drop database if exists ${TEMPLATE} with (force)`)
    await admin.query(`create database ${TEMPLATE}`)
  } finally {
    await admin.end()
  }
  const db = createDb({ connectionString: withDatabase(databaseUrl, TEMPLATE), maxConnections: 1 })
  try {
    await migrateToLatest(db)
  } finally {
    await db.destroy()
  }

  project.provide('databaseUrl', databaseUrl)
  project.provide('redisUrl', redisUrl)
  project.provide('templateDatabase', TEMPLATE)
  return async () => {
    for (const stop of stops) await stop()
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
      'Integration tests need Postgres and Redis: set DATABASE_URL and REDIS_URL ' +
        '(e.g. postgres://postgres@127.0.0.1:5432/postgres and redis://127.0.0.1:6379), ' +
        'or run Docker so testcontainers can start them.',
      { cause: error },
    )
  }
}
