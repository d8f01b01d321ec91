import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { BatonApiError, createBatonClient } from './client.ts'

// A plain HTTP server stands in for the API: these tests are about what the client sends and how it
// reads answers, not about the API.
let server: http.Server
let baseUrl = ''
const seen: { path: string; headers: http.IncomingHttpHeaders }[] = []

beforeAll(async () => {
  server = http.createServer((req, res) => {
    seen.push({ path: req.url ?? '', headers: req.headers })
    if (req.url?.startsWith('/v1/attempts/slow')) return // never answers
    if (req.url?.startsWith('/v1/artifacts/stalled')) {
      res.writeHead(200, { 'content-type': 'application/octet-stream' }).write('the first bytes')
      return // never ends the body
    }
    if (req.url?.startsWith('/v1/attempts/broken')) {
      res.writeHead(502, { 'content-type': 'text/plain' }).end('bad gateway')
      return
    }
    if (req.url?.startsWith('/v1/attempts/')) {
      res
        .writeHead(409, { 'content-type': 'application/json' })
        .end(JSON.stringify({ error: { code: 'ATTEMPT_TERMINAL', message: 'terminal' } }))
      return
    }
    res
      .writeHead(202, { 'content-type': 'application/json' })
      .end(JSON.stringify({ agentId: 'a', attemptId: 't', status: 'accepted' }))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})
afterAll(async () => {
  server.closeAllConnections()
  await new Promise((resolve) => server.close(resolve))
})

describe('per-call options', () => {
  test('an idempotency key is sent as the Idempotency-Key header, and only when given', async () => {
    const client = createBatonClient({ baseUrl })
    const input = { sessionId: 's', name: 'scripted', prompt: 'x' }
    await client.delegate(input, { idempotencyKey: 'key-1' })
    await client.delegate(input)
    expect(seen.at(-2)?.headers['idempotency-key']).toBe('key-1')
    expect(seen.at(-1)?.headers['idempotency-key']).toBeUndefined()
  })

  test('a call without an answer is abandoned after its timeout, and when its signal fires', async () => {
    const client = createBatonClient({ baseUrl })
    const started = performance.now()
    await expect(client.getAttempt('slow', { timeoutMs: 100 })).rejects.toMatchObject({
      name: 'TimeoutError',
    })
    expect(performance.now() - started).toBeLessThan(5_000)
    const controller = new AbortController()
    const pending = client.getAttempt('slow', { signal: controller.signal })
    controller.abort()
    await expect(pending).rejects.toMatchObject({ name: 'AbortError' })
  })

  test('a call given a signal and a timeout is abandoned by whichever fires first', async () => {
    const client = createBatonClient({ baseUrl })
    const controller = new AbortController()
    const aborted = client.getAttempt('slow', { signal: controller.signal, timeoutMs: 60_000 })
    controller.abort()
    await expect(aborted).rejects.toMatchObject({ name: 'AbortError' })
    const timedOut = client.getAttempt('slow', {
      signal: new AbortController().signal,
      timeoutMs: 100,
    })
    await expect(timedOut).rejects.toMatchObject({ name: 'TimeoutError' })
  })

  test('a call that has its answer stops its timeout: the signal it gave fetch never fires', async () => {
    const signals: AbortSignal[] = []
    const client = createBatonClient({
      baseUrl,
      fetch: (_url, init) => {
        if (init?.signal) signals.push(init.signal)
        return Promise.resolve(
          new Response(JSON.stringify({ agentId: 'a', attemptId: 't', status: 'accepted' }), {
            status: 202,
          }),
        )
      },
    })
    await client.delegate({ sessionId: 's', name: 'scripted', prompt: 'x' }, { timeoutMs: 50 })
    await new Promise((resolve) => setTimeout(resolve, 200))
    expect(signals).toHaveLength(1)
    expect(signals[0]?.aborted).toBe(false)
  })

  test("an artifact's timeout covers its body, not only the answer's headers", async () => {
    const client = createBatonClient({ baseUrl })
    await expect(client.readArtifact('stalled', { timeoutMs: 200 })).rejects.toMatchObject({
      name: 'TimeoutError',
    })
  })

  test('an error answer becomes a BatonApiError with its status, code and raw body, JSON or not', async () => {
    const client = createBatonClient({ baseUrl })
    const typed = await client.cancel('done').catch((e: unknown) => e)
    expect(typed).toBeInstanceOf(BatonApiError)
    expect(typed).toMatchObject({ status: 409, code: 'ATTEMPT_TERMINAL' })
    expect((typed as BatonApiError).body).toContain('ATTEMPT_TERMINAL')
    const untyped = await client.getAttempt('broken').catch((e: unknown) => e)
    expect(untyped).toMatchObject({ status: 502, code: 'INTERNAL', body: 'bad gateway' })
  })
})
