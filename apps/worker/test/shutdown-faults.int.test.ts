// A worker that stops while its dependencies misbehave: an attempt it claimed but never started
// goes back to the queue (never ends `shutdown`), and with Postgres and Redis both unanswering a
// checked shutdown still ends at its deadline, saying what it left.
import { randomUUID } from 'node:crypto'
import { Writable } from 'node:stream'
import { createLogger } from '@baton/observability'
import { describe, expect, startFaultProxy, test, transitionEvents } from '@baton/testing'
import { SHUTDOWN_OVERRUN_MARGIN_MS, ShutdownDeadlineError } from '../src/shutdown.ts'
import { accept, enqueue, startRuntime, untilTerminal } from './support/worker-harness.ts'
import { witnessedChild, witnessedPrompt } from './support/witnessed-child.ts'

/** A logger whose lines (parsed) the test reads. */
function capturedLogger() {
  const lines: Record<string, unknown>[] = []
  const destination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split('\n'))
        if (line.trim() !== '') lines.push(JSON.parse(line) as Record<string, unknown>)
      done()
    },
  })
  return { logger: createLogger({ service: 'test', level: 'info', destination }), lines }
}

describe('shutdown under dependency faults', () => {
  for (const answer of ['arrives', 'is lost'] as const) {
    test(`an attempt claimed but not started when its worker stops (its claim's answer ${answer}) goes back to the queue, and the next worker runs it`, async ({
      db,
      databaseUrl,
      redisUrl,
      queuePrefix,
      track,
    }) => {
      const proxy = track(await startFaultProxy(databaseUrl))
      const child = witnessedChild()
      const stopping = await startRuntime(
        { databaseUrl: proxy.url, redisUrl, queuePrefix, track },
        child.provider,
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

      const next = await startRuntime({ databaseUrl, redisUrl, queuePrefix, track }, child.provider)
      expect(await untilTerminal(db, attemptId)).toMatchObject({ stopReason: 'completed' })
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
    })
  }

  test('Postgres and Redis both unanswering: an idle worker stops at its deadline and names what it left', async ({
    databaseUrl,
    redisUrl,
    queuePrefix,
    track,
  }) => {
    const pg = track(await startFaultProxy(databaseUrl))
    const redis = track(await startFaultProxy(redisUrl))
    const { logger, lines } = capturedLogger()
    const runtime = await startRuntime(
      { databaseUrl: pg.url, redisUrl: redis.url, queuePrefix, track },
      witnessedChild().provider,
      {},
      { logger },
    )
    pg.stall()
    redis.stall()
    const deadlineMs = 2_000
    const started = performance.now()
    await runtime.shutdownChecked(deadlineMs)
    expect(performance.now() - started).toBeLessThan(deadlineMs + SHUTDOWN_OVERRUN_MARGIN_MS)
    expect(runtime.isStopped()).toBe(true)
    const stoppedLine = lines.find((l) =>
      String(l.msg).startsWith('worker stopped at its shutdown deadline'),
    )
    expect(stoppedLine?.left).toEqual(expect.arrayContaining([expect.any(String)]))
    pg.resume()
    redis.resume()
    await pg.close()
    await redis.close()
  })

  test('Postgres and Redis both unanswering: a worker with a running child gives up at its deadline, keeps ownership, and names the attempts it holds', async ({
    db,
    databaseUrl,
    redisUrl,
    queuePrefix,
    track,
  }) => {
    const pg = track(await startFaultProxy(databaseUrl))
    const redis = track(await startFaultProxy(redisUrl))
    const { logger, lines } = capturedLogger()
    const child = witnessedChild()
    // A lease that outlives the stall: the aborted child's result still lands afterwards.
    const runtime = await startRuntime(
      { databaseUrl: pg.url, redisUrl: redis.url, queuePrefix, track },
      child.provider,
      { LEASE_TTL_MS: '20000', HEARTBEAT_INTERVAL_MS: '1000' },
      { logger },
    )
    const prompt = witnessedPrompt(`running-${randomUUID()}`, 600_000)
    const attemptId = await accept(db, prompt)
    await enqueue({ redisUrl, queuePrefix }, attemptId)
    for (let i = 0; i < 400 && child.starts(prompt) === 0; i += 1)
      await new Promise((r) => setTimeout(r, 25))
    expect(child.starts(prompt)).toBe(1)
    pg.stall()
    redis.stall()
    const deadlineMs = 2_000
    const started = performance.now()
    const outcome = await runtime.shutdownChecked(deadlineMs).catch((error: unknown) => error)
    expect(performance.now() - started).toBeLessThan(deadlineMs + SHUTDOWN_OVERRUN_MARGIN_MS)
    expect(outcome).toBeInstanceOf(ShutdownDeadlineError)
    const gaveUp = lines.find((l) => String(l.msg).startsWith('shutdown deadline passed'))
    expect(gaveUp?.attempts).toEqual([attemptId])
    // Once the dependencies answer again, a second call finishes the drain: the child was aborted.
    pg.resume()
    redis.resume()
    await runtime.shutdownChecked(20_000)
    expect(await untilTerminal(db, attemptId)).toMatchObject({
      stopReason: 'aborted',
      failureCategory: 'shutdown',
    })
    await pg.close()
    await redis.close()
  })
})
