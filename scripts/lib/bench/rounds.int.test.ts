import { randomUUID } from 'node:crypto'
import { once } from 'node:events'
import { createServer } from 'node:net'
import type { Redis } from 'ioredis'
import { expect, freePort, test } from '@baton/testing'
import { connectPostgresCounters, redisProcessId } from './counters.ts'
import { ROUND_SYSTEMS, runPhase, type PhaseFigures, type RoundsContext } from './rounds.ts'

/** A rounds context on the test's Redis and Postgres server, with databases of its own prefix. */
async function roundsContext(
  databaseUrl: string,
  redisUrl: string,
  connection: Redis,
): Promise<RoundsContext> {
  return {
    redisUrl,
    redis: connection,
    redisPid: redisProcessId(await connection.info('server')),
    serverUrl: databaseUrl,
    databasePrefix: `rounds_${randomUUID().slice(0, 8)}`,
    postgres: await connectPostgresCounters(databaseUrl),
    postgresIdleMsPerMs: 0,
  }
}

/**
 * Ends the context's Postgres connection, then quits Redis and waits for the end (the fixture
 * checks that every connection it handed out has ended).
 */
async function closeContext(context: RoundsContext): Promise<void> {
  await context.postgres.admin.end()
  const ended = once(context.redis, 'end')
  await context.redis.quit()
  await ended
}

/** The phases' databases still on the server. */
async function databasesLeft(context: RoundsContext): Promise<string[]> {
  const r = await context.postgres.admin.query<{ datname: string }>(
    'select datname from pg_database where datname like $1',
    [`${context.databasePrefix}%`],
  )
  return r.rows.map((row) => row.datname)
}

test('a round runs every system on fresh processes and database, measures it, and leaves nothing behind', async ({
  databaseUrl,
  redisUrl,
  redis,
}) => {
  const connection = redis()
  const context = await roundsContext(databaseUrl, redisUrl, connection)
  const sizes = { count: 150, warmup: 20, clients: 8, sequential: 5, workers: 1, concurrency: 10 }
  const phases: PhaseFigures[] = []
  try {
    for (const system of ROUND_SYSTEMS)
      phases.push(await runPhase(system, 1, context, sizes, await freePort()))
    expect(await databasesLeft(context)).toEqual([])
    // Every key a phase wrote went with it.
    expect(await connection.keys('baton-rounds-*')).toEqual([])
  } finally {
    await closeContext(context)
  }

  expect(phases.map((p) => p.system)).toEqual([...ROUND_SYSTEMS])
  for (const p of phases) {
    expect(p.round).toBe(1)
    expect(p.perSecond).toBeGreaterThan(0)
    // 150 delegations through HTTP, a queue and a child cost more than one clock tick.
    expect(p.nodeCpuMs).toBeGreaterThan(0)
    expect(p.apiCpuMs).toBeGreaterThan(0)
    expect(p.apiCpuMs).toBeLessThan(p.nodeCpuMs)
    expect(p.redisCommands).toBeGreaterThan(10)
    expect(p.cpuMs).toBeCloseTo(p.nodeCpuMs + p.redisCpuMs + p.postgresCpuMs, 2)
    expect(p.waitP50Ms).toBeGreaterThan(0)
    expect(p.waitP99Ms).toBeGreaterThanOrEqual(p.waitP50Ms)
  }
  // Only the queue floor has no database.
  expect(phases.find((p) => p.system === 'floor')?.postgresCpuMs).toBe(0)
}, 180_000)

test('a phase whose system cannot start fails, and drops the database it made', async ({
  databaseUrl,
  redisUrl,
  redis,
}) => {
  const connection = redis()
  const context = await roundsContext(databaseUrl, redisUrl, connection)
  // The port is taken: the API cannot listen.
  const server = createServer()
  const port = await freePort()
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve))
  try {
    const sizes = { count: 10, warmup: 0, clients: 1, sequential: 1, workers: 1, concurrency: 1 }
    await expect(runPhase('bare', 1, context, sizes, port)).rejects.toThrow(/exited/)
    expect(await databasesLeft(context)).toEqual([])
    // The worker that did start had written its queue's keys.
    expect(await connection.keys('baton-rounds-*')).toEqual([])
  } finally {
    server.close()
    await closeContext(context)
  }
})
