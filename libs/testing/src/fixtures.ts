import { randomUUID } from 'node:crypto'
import { Redis } from 'ioredis'
import pg from 'pg'
import { inject, test as base } from 'vitest'
import { createDb, type Db } from '@baton/store'
import { withDatabase } from './global-setup.ts'
import { startStack, type BatonStack, type StartBaton } from './stack.ts'

/** Anything a test opens that must be closed before the test ends. */
export interface Closeable {
  close(): Promise<unknown>
  isClosed(): boolean
}

export interface ServiceFixtures {
  /**
   * A database of this file's own, cloned from the migrated template: the URL Baton's apps are
   * given (through PgBouncer in the `integration-pgbouncer` project).
   */
  databaseUrl: string
  /** The test's own connections to that database, always direct. */
  db: Db
  redisUrl: string
  /** A BullMQ prefix of this file's own. */
  queuePrefix: string
  /**
   * Registers something the test opens (worker, queue, connection, server). After the test every
   * registered resource must have been closed by the test; the fixture closes leftovers and fails.
   */
  track: <T extends Closeable>(resource: T) => T
  /** A tracked ioredis connection. */
  redis: () => Redis
  /** The fixtures above in one object, as the harnesses that start Baton's parts take them. */
  services: Services
  /**
   * Starts a Baton on this test's services: the API and workers as processes (see `startStack`),
   * every one tracked and all stopped after the test, workers first.
   */
  baton: StartBaton
}

export type Services = Pick<
  ServiceFixtures,
  'databaseUrl' | 'db' | 'redisUrl' | 'queuePrefix' | 'track' | 'redis'
>

interface FileFixtures {
  fileDatabase: { url: string; appUrl: string; db: Db }
  fileQueuePrefix: string
}

export const test = base.extend<FileFixtures & ServiceFixtures>({
  fileDatabase: [
    async ({}, use) => {
      const root = inject('databaseUrl')
      const name = `baton_t_${randomUUID().replaceAll('-', '').slice(0, 16)}`
      const admin = new pg.Client({ connectionString: root })
      await admin.connect()
      try {
        await admin.query(`create database ${name} template ${inject('templateDatabase')}`)
      } finally {
        await admin.end()
      }
      const url = withDatabase(root, name)
      const db = createDb({
        connectionString: url,
        maxConnections: 10,
        applicationName: 'baton-test',
      })
      const pooled = inject('pooledDatabaseUrl')
      await use({ url, appUrl: pooled === undefined ? url : withDatabase(pooled, name), db })
      await db.destroy()
      const cleanup = new pg.Client({ connectionString: root })
      await cleanup.connect()
      try {
        await cleanup.query(`drop database if exists ${name} with (force)`)
      } finally {
        await cleanup.end()
      }
    },
    { scope: 'file' },
  ],
  fileQueuePrefix: [
    async ({}, use) => {
      const prefix = `baton-t-${randomUUID().slice(0, 8)}`
      await use(prefix)
      const redis = new Redis(inject('redisUrl'))
      try {
        let cursor = '0'
        do {
          const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000)
          cursor = next
          if (keys.length > 0) await redis.del(...keys)
        } while (cursor !== '0')
      } finally {
        redis.disconnect()
      }
    },
    { scope: 'file' },
  ],
  databaseUrl: async ({ fileDatabase }, use) => use(fileDatabase.appUrl),
  db: async ({ fileDatabase }, use) => use(fileDatabase.db),
  redisUrl: async ({}, use) => use(inject('redisUrl')),
  queuePrefix: async ({ fileQueuePrefix }, use) => use(fileQueuePrefix),
  track: async ({ task }, use) => {
    const tracked: Closeable[] = []
    await use((resource) => {
      tracked.push(resource)
      return resource
    })
    const leftovers = tracked.filter((t) => !t.isClosed())
    // Close in reverse order of opening: workers before the connections they use.
    for (const t of leftovers.reverse()) await t.close().catch(() => undefined)
    if (leftovers.length > 0 && task.result?.state !== 'fail') {
      throw new Error(`${leftovers.length} resource(s) were left open by "${task.name}"`)
    }
  },
  redis: async ({ redisUrl, track }, use) => {
    await use(() => {
      const connection = new Redis(redisUrl, { maxRetriesPerRequest: null })
      return track({
        close: () => connection.quit(),
        isClosed: () => connection.status === 'end',
        connection,
      }).connection
    })
  },
  services: async ({ databaseUrl, db, redisUrl, queuePrefix, track, redis }, use) =>
    use({ databaseUrl, db, redisUrl, queuePrefix, track, redis }),
  baton: async ({ services }, use) => {
    const stacks: BatonStack[] = []
    const start = async (options?: Parameters<typeof startStack>[1]) => {
      const stack = await startStack(services, options)
      stacks.push(stack)
      return stack
    }
    await use(start)
    for (const stack of stacks.reverse()) await stack.close()
  },
})

export { describe, expect } from 'vitest'
