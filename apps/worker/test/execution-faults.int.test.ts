// The execution around a child when things go wrong around it: a child that outlives its abort, a
// dispose that hangs, a steering mark that fails just before the commit, a stop signal during
// start-up, a store call that keeps failing while the attempt is cancelled.
import { sql } from 'kysely'
import { createScriptedPromptProvider } from '@baton/agents'
import { WORKER_READY_MESSAGE } from '@baton/observability'
import { createWorkerCommandPublisher } from '@baton/queue'
import { getAttempt, recordSteering, requestCancel } from '@baton/store'
import type { SubagentResult } from '@baton/subagents'
import { describe, eventually, expect, startFaultProxy, test } from '@baton/testing'
import { loadConfig } from '../src/config.ts'
import { createWorkerRuntime } from '../src/runtime.ts'
import { builtInSubagents } from '../src/subagents/subagent-catalog.ts'
import {
  accept,
  acceptContinuation,
  childProvider,
  enqueue,
  injectUpdateFault,
  startRuntime,
  untilTerminal,
} from './support/worker-harness.ts'
import { DISPOSE_TIMEOUT_MS } from '../src/processors/run-child.ts'
import { capturedLogger } from './support/captured-logger.ts'

describe('faults around an execution', () => {
  test('a child that ignores its abort after its lease was confirmed lost keeps its slot until it returns', async ({
    services,
  }) => {
    const { db, databaseUrl, redisUrl, queuePrefix, track } = services
    let release!: () => void
    const released = new Promise<void>((resolve) => (release = resolve))
    const starts: string[] = []
    const provider = childProvider(async (request): Promise<SubagentResult> => {
      const text = request.prompt.map((b) => b.text).join('')
      starts.push(text)
      if (text === 'stubborn') await released
      return { output: [{ type: 'text', text }], stopReason: 'completed' }
    })
    const { logger, lines } = capturedLogger()
    const runtime = await startRuntime(
      { databaseUrl, redisUrl, queuePrefix, track },
      provider,
      { WORKER_CONCURRENCY: '1' },
      { logger },
    )
    try {
      const stubborn = await accept(db, 'stubborn')
      await enqueue({ redisUrl, queuePrefix }, stubborn)
      await eventually(async () => (starts.includes('stubborn') ? true : undefined))
      const next = await accept(db, 'next')
      await enqueue({ redisUrl, queuePrefix }, next)
      // Another owner takes the attempt over: the next heartbeat confirms the loss.
      await sql`
        update attempts set owner_id = 'another-worker', owner_generation = owner_generation + 1
        where id = ${stubborn}
      `.execute(db)
      await eventually(async () =>
        lines.some((l) => l.msg === 'lease lost; aborting child') ? true : undefined,
      )
      // Ten heartbeats later the one slot is still the stubborn child's.
      await new Promise((r) => setTimeout(r, 2_000))
      expect(starts).toEqual(['stubborn'])
      expect((await getAttempt(db, next))?.status).toBe('accepted')
      release()
      expect(await untilTerminal(db, next)).toMatchObject({
        stopReason: 'completed',
        output: 'next',
      })
      // The lost attempt was left alone: this worker wrote nothing for it.
      expect((await getAttempt(db, stubborn))?.stopReason).not.toBe('completed')
    } finally {
      release()
      await runtime.shutdownChecked(10_000)
    }
  })

  test(
    'a dispose that hangs does not hold the finished result back',
    { timeout: 60_000 },
    async ({ services }) => {
      const { db, databaseUrl, redisUrl, queuePrefix, track } = services
      const provider = {
        ...childProvider(async () => ({
          output: [{ type: 'text' as const, text: 'finished' }],
          stopReason: 'completed' as const,
        })),
      }
      const hanging = {
        ...provider,
        async start(request: Parameters<typeof provider.start>[0]) {
          const run = await provider.start(request)
          return { ...run, dispose: () => new Promise<void>(() => undefined) }
        },
      }
      const runtime = await startRuntime({ databaseUrl, redisUrl, queuePrefix, track }, hanging)
      try {
        const attemptId = await accept(db, 'x')
        await enqueue({ redisUrl, queuePrefix }, attemptId)
        const view = await eventually(
          async () => {
            const v = await getAttempt(db, attemptId)
            return v?.status === 'terminal' ? v : undefined
          },
          { timeoutMs: DISPOSE_TIMEOUT_MS * 4 },
        )
        expect(view).toMatchObject({ stopReason: 'completed', output: 'finished' })
      } finally {
        await runtime.shutdownChecked(10_000)
      }
    },
  )

  test('a steering mark that fails just before the commit is tried again before the commit', async ({
    services,
  }) => {
    const { db, databaseUrl, redisUrl, queuePrefix, track } = services
    const publisher = createWorkerCommandPublisher({ redisUrl, prefix: queuePrefix })
    // Heartbeats a minute apart: only the steer event delivers.
    const runtime = await startRuntime(
      { databaseUrl, redisUrl, queuePrefix, track },
      createScriptedPromptProvider(),
      { HEARTBEAT_INTERVAL_MS: '60000', LEASE_TTL_MS: '120000' },
    )
    try {
      const attemptId = await accept(db, '{"awaitSteering":1}')
      await enqueue({ redisUrl, queuePrefix }, attemptId)
      await eventually(async () =>
        (await getAttempt(db, attemptId))?.status === 'running' ? true : undefined,
      )
      const fault = await injectUpdateFault(db, {
        attemptId,
        on: 'mark',
        sqlstate: '40001',
        times: 5,
      })
      await recordSteering(db, { attemptId, content: [{ type: 'text', text: 'last' }] })
      await publisher.publish({ eventName: 'steer', attemptId })
      expect(await untilTerminal(db, attemptId)).toMatchObject({
        stopReason: 'completed',
        output: 'last',
        steering: { accepted: 1, delivered: 1 },
      })
      await fault.remove()
    } finally {
      await publisher.close()
      await runtime.shutdownChecked(5_000)
    }
  })

  test('a stop signal during start-up: the start stops where it is and nothing is fetched', async ({
    services,
  }) => {
    const { db, databaseUrl, redisUrl, queuePrefix, track } = services
    // A slow Redis: the start is still waiting for it when the stop comes.
    const slowRedis = track(await startFaultProxy(redisUrl))
    slowRedis.delay(200)
    const config = loadConfig({
      DATABASE_URL: databaseUrl,
      REDIS_URL: slowRedis.url,
      QUEUE_PREFIX: queuePrefix,
      METRICS_PORT: '0',
    })
    const { logger, lines } = capturedLogger()
    const runtime = createWorkerRuntime(config, logger, builtInSubagents())
    const started = runtime.start()
    await runtime.shutdownChecked(10_000)
    await started
    await slowRedis.close()
    expect(runtime.isStopped()).toBe(true)
    const stoppedAt = lines.findIndex((l) => l.msg === 'worker stopped')
    expect(stoppedAt).toBeGreaterThanOrEqual(0)
    expect(lines.slice(stoppedAt).some((l) => l.msg === WORKER_READY_MESSAGE)).toBe(false)
    const attemptId = await accept(db, '{"output":"never"}')
    await enqueue({ redisUrl, queuePrefix }, attemptId)
    await new Promise((r) => setTimeout(r, 1_000))
    expect((await getAttempt(db, attemptId))?.status).toBe('accepted')
    await requestCancel(db, { attemptId, reason: null })
  })

  test('a store call that keeps failing before the child started ends with the attempt’s cancel', async ({
    services,
  }) => {
    const { db, databaseUrl, redisUrl, queuePrefix, track } = services
    const runtime = await startRuntime(
      { databaseUrl, redisUrl, queuePrefix, track },
      createScriptedPromptProvider(),
      // Each try ends: by the server's lock_timeout on a direct connection, by the pool's own
      // statement deadline behind PgBouncer (which drops lock_timeout from the startup packet).
      { DB_LOCK_TIMEOUT_MS: '200', DB_STATEMENT_TIMEOUT_MS: '1000' },
    )
    const publisher = createWorkerCommandPublisher({ redisUrl, prefix: queuePrefix })
    const blocker = await import('pg').then(
      ({ default: pg }) => new pg.Client({ connectionString: databaseUrl }),
    )
    await blocker.connect()
    try {
      const { attemptId } = await acceptContinuation(db, '{"output":"never"}')
      // The continuation's history cannot be read: every try waits for the lock, then times out.
      await blocker.query('begin')
      await blocker.query('lock table agents in access exclusive mode')
      await enqueue({ redisUrl, queuePrefix }, attemptId)
      await eventually(async () =>
        (await getAttempt(db, attemptId))?.status === 'running' ? true : undefined,
      )
      await requestCancel(db, { attemptId, reason: 'give up' })
      await publisher.publish({ eventName: 'cancel', attemptId })
      // The cancel ends the retrying while the lock is still held.
      expect(await untilTerminal(db, attemptId)).toMatchObject({
        stopReason: 'aborted',
        failureCategory: 'cancelled',
      })
    } finally {
      await blocker.query('rollback').catch(() => undefined)
      await blocker.end()
      await publisher.close()
      await runtime.shutdownChecked(5_000)
    }
  })
})
