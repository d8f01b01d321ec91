// A worker that stops while its dependencies misbehave: an attempt it claimed but never started
// goes back to the queue (never ends `shutdown`), and with Postgres and Redis both unanswering a
// checked shutdown still ends at its deadline, saying what it left.
import { randomUUID } from 'node:crypto'
import {
  describe,
  eventually,
  expect,
  startFaultProxy,
  test,
  transitionEvents,
  untilAttempt,
} from '@baton/testing'
import type { WorkerRuntime } from '../src/runtime.ts'
import { SHUTDOWN_OVERRUN_MARGIN_MS, ShutdownDeadlineError } from '../src/shutdown.ts'
import {
  accept,
  enqueue,
  startRuntime,
  untilTerminal,
  type WorkerTestContext,
} from './support/worker-harness.ts'
import { capturedLogger } from './support/captured-logger.ts'
import { witnessedChild, witnessedPrompt, type WitnessedChild } from './support/witnessed-child.ts'

const DEADLINE_MS = 2_000

/** A worker that reaches Postgres and Redis through fault proxies, its log lines captured. */
async function behindProxies(
  ctx: WorkerTestContext,
  child: WitnessedChild,
  env: Record<string, string> = {},
) {
  const pg = ctx.track(await startFaultProxy(ctx.databaseUrl))
  const redis = ctx.track(await startFaultProxy(ctx.redisUrl))
  const { logger, lines } = capturedLogger()
  const runtime = await startRuntime(
    { ...ctx, databaseUrl: pg.url, redisUrl: redis.url },
    child.provider,
    env,
    { logger },
  )
  return {
    runtime,
    lines,
    stallBoth() {
      pg.stall()
      redis.stall()
    },
    /** Both answer again; the shutdown is completed; the proxies close. */
    async close() {
      pg.resume()
      redis.resume()
      await runtime.shutdownChecked(20_000)
      await pg.close()
      await redis.close()
    },
  }
}

/** A checked shutdown of `DEADLINE_MS`: how long it took, and how it ended. */
async function timedShutdown(runtime: WorkerRuntime) {
  const started = performance.now()
  const outcome = await runtime.shutdownChecked(DEADLINE_MS).then(
    () => 'stopped' as const,
    (error: unknown) => error,
  )
  return { elapsedMs: performance.now() - started, outcome }
}

describe('shutdown under dependency faults', () => {
  for (const answer of ['arrives', 'is lost'] as const) {
    test(
      `an attempt claimed but not started when its worker stops (its claim's answer ${answer}) goes back to the queue, and the next worker runs it`,
      {
        timeout: 120_000,
      },
      async ({ services }) => {
        const { db, databaseUrl, redisUrl, queuePrefix, track } = services
        const proxy = track(await startFaultProxy(databaseUrl))
        const child = witnessedChild()
        // A claim whose answer was lost is renewed by nobody: its lease outlasts a busy machine's
        // way to the hand-back.
        const stoppingLog = capturedLogger()
        const stopping = await startRuntime(
          { databaseUrl: proxy.url, redisUrl, queuePrefix, track },
          child.provider,
          { LEASE_TTL_MS: '15000', HEARTBEAT_INTERVAL_MS: '1000' },
          { logger: stoppingLog.logger },
        )
        const prompt = witnessedPrompt(`handed-back-${randomUUID()}`)
        const attemptId = await accept(db, prompt)
        const held = proxy.holdAnswerAfter(attemptId)
        await enqueue({ redisUrl, queuePrefix }, attemptId)
        const claimAnswer = await held
        // The claim is in the ledger; the worker is told to stop before it hears of it.
        const stopped = stopping.shutdownChecked(10_000)
        if (answer === 'arrives') claimAnswer.release()
        else claimAnswer.reset()
        await stopped
        expect(child.starts(prompt)).toBe(0)

        const next = await startRuntime(
          { databaseUrl, redisUrl, queuePrefix, track },
          child.provider,
        )
        // Handed back, the next worker takes it at once; should the hand-back not reach Redis, the
        // next worker's reconciler enqueues it again. Either way it runs here, far within this
        // bound; on a timeout, what the ledger and the stopping worker said.
        const ended = await untilAttempt(db, attemptId, 'terminal', { timeoutMs: 60_000 }).catch(
          async (error: unknown) => {
            const said = stoppingLog.lines.map((l) => `${String(l.level)} ${String(l.msg)}`)
            throw new Error(
              `${String(error)}; transitions ${JSON.stringify(await transitionEvents(db, attemptId))}; the stopping worker said ${JSON.stringify(said)}`,
            )
          },
        )
        expect(ended).toMatchObject({ stopReason: 'completed' })
        expect(child.starts(prompt)).toBe(1)
        expect(await transitionEvents(db, attemptId)).toEqual([
          'accepted',
          'claimed',
          'released',
          'claimed',
          'committed',
        ])
        await next.shutdownChecked(10_000)
        await proxy.close()
      },
    )
  }

  test('Postgres and Redis both unanswering: an idle worker stops at its deadline and names what it left', async ({
    services,
  }) => {
    const { databaseUrl, redisUrl, queuePrefix, track } = services
    const h = await behindProxies({ databaseUrl, redisUrl, queuePrefix, track }, witnessedChild())
    h.stallBoth()
    const { elapsedMs, outcome } = await timedShutdown(h.runtime)
    expect(elapsedMs).toBeLessThan(DEADLINE_MS + SHUTDOWN_OVERRUN_MARGIN_MS)
    expect(outcome).toBe('stopped')
    expect(h.runtime.isStopped()).toBe(true)
    const stopped = h.lines.find((l) =>
      String(l.msg).startsWith('worker stopped at its shutdown deadline'),
    )
    expect(stopped?.left).toEqual(expect.arrayContaining([expect.any(String)]))
    await h.close()
  })

  test('Postgres and Redis both unanswering: a worker with a running child gives up at its deadline, keeps ownership, and names the attempts it holds', async ({
    services,
  }) => {
    const { db, databaseUrl, redisUrl, queuePrefix, track } = services
    const child = witnessedChild()
    // A lease that outlives the stall: the aborted child's result still lands afterwards.
    const h = await behindProxies({ databaseUrl, redisUrl, queuePrefix, track }, child, {
      LEASE_TTL_MS: '20000',
      HEARTBEAT_INTERVAL_MS: '1000',
    })
    const prompt = witnessedPrompt(`running-${randomUUID()}`, 600_000)
    const attemptId = await accept(db, prompt)
    await enqueue({ redisUrl, queuePrefix }, attemptId)
    await eventually(async () => (child.starts(prompt) === 1 ? true : undefined))
    h.stallBoth()
    const { elapsedMs, outcome } = await timedShutdown(h.runtime)
    expect(elapsedMs).toBeLessThan(DEADLINE_MS + SHUTDOWN_OVERRUN_MARGIN_MS)
    expect(outcome).toBeInstanceOf(ShutdownDeadlineError)
    const gaveUp = h.lines.find((l) => String(l.msg).startsWith('shutdown deadline passed'))
    expect(gaveUp?.attempts).toEqual([attemptId])
    // Once the dependencies answer again, a second call finishes the drain: the child was aborted.
    await h.close()
    expect(await untilTerminal(db, attemptId)).toMatchObject({
      stopReason: 'aborted',
      failureCategory: 'shutdown',
    })
  })
})
