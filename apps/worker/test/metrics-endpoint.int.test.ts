// A worker's own /metrics server: started and closed with the runtime, and never a reason for a
// worker not to work.
import { createServer } from 'node:net'
import { createScriptedPromptProvider } from '@baton/agents'
import { describe, expect, freePort, sampleValue, test } from '@baton/testing'
import {
  accept,
  enqueue,
  startRuntime,
  untilTerminal,
  type WorkerTestContext,
} from './support/worker-harness.ts'

/** A runtime told to serve /metrics on 127.0.0.1:`port`. */
function startServing(ctx: WorkerTestContext, port: number) {
  return startRuntime(ctx, createScriptedPromptProvider(), {
    METRICS_HOST: '127.0.0.1',
    METRICS_PORT: String(port),
  })
}

describe('worker metrics endpoint', () => {
  test('serves GET /metrics on METRICS_PORT while the runtime runs, 404 elsewhere, and closes with it', async ({
    services: ctx,
    db,
  }) => {
    const port = await freePort()
    const runtime = await startServing(ctx, port)
    const url = `http://127.0.0.1:${port}`
    const attemptId = await accept(db, '{"output":"scraped"}')
    await enqueue(ctx, attemptId)
    await untilTerminal(db, attemptId)
    const response = await fetch(`${url}/metrics`)
    expect(response.status).toBe(200)
    expect(response.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8')
    const text = await response.text()
    const completed = { stop_reason: 'completed', failure_category: 'none' }
    expect(sampleValue(text, 'baton_attempts_terminal_total', completed)).toBe(1)
    expect((await fetch(`${url}/other`)).status).toBe(404)
    await runtime.shutdownChecked(5_000)
    await expect(fetch(`${url}/metrics`)).rejects.toThrow()
  })

  test('a METRICS_PORT another process holds is logged and the worker runs without the endpoint', async ({
    services: ctx,
    db,
  }) => {
    const holder = createServer()
    await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve))
    const address = holder.address()
    const port = typeof address === 'object' && address !== null ? address.port : 0
    try {
      const runtime = await startServing(ctx, port)
      const attemptId = await accept(db, '{"output":"still works"}')
      await enqueue(ctx, attemptId)
      expect(await untilTerminal(db, attemptId)).toMatchObject({ stopReason: 'completed' })
      // Counted all the same, in the runtime's registry.
      const text = await runtime.metrics.registry.metrics()
      const completed = { stop_reason: 'completed', failure_category: 'none' }
      expect(sampleValue(text, 'baton_attempts_terminal_total', completed)).toBe(1)
      await runtime.shutdownChecked(5_000)
    } finally {
      await new Promise<void>((resolve) => holder.close(() => resolve()))
    }
  })
})
