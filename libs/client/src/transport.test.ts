import { randomBytes } from 'node:crypto'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { sendRequest, type Outgoing } from './transport.ts'

// A plain HTTP server: these tests are about the transport's contract.
let server: http.Server
let base = ''
const big = randomBytes(1_000_000)

beforeAll(async () => {
  server = http.createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (chunk: Buffer) => chunks.push(chunk))
    req.on('end', () => {
      if (req.url === '/echo') {
        res.setHeader('x-many', ['a', 'b'])
        res.writeHead(201, 'Made', { 'content-type': 'application/json' })
        res.end(
          JSON.stringify({
            method: req.method,
            header: req.headers['x-test'],
            body: Buffer.concat(chunks).toString(),
            port: req.socket.remotePort,
          }),
        )
      } else if (req.url === '/empty') {
        res.writeHead(204).end()
      } else if (req.url === '/big') {
        res.writeHead(200, { 'content-type': 'application/octet-stream' }).end(big)
      } else if (req.url === '/stalled') {
        res.writeHead(200).write('the first bytes') // and never the rest
      } else {
        res.writeHead(404).end('no such route')
      }
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})
afterAll(async () => {
  server.closeAllConnections()
  await new Promise((resolve) => server.close(resolve))
})

/** A port on which nothing listens. */
async function closedPort(): Promise<number> {
  const probe = http.createServer()
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve))
  const { port } = probe.address() as AddressInfo
  await new Promise((resolve) => probe.close(resolve))
  return port
}

const get: Outgoing = { method: 'GET', headers: {} }

describe('the default transport (undici request)', () => {
  test('sends the method, headers and body, and answers status, headers and body', async () => {
    const response = await sendRequest(`${base}/echo`, {
      method: 'POST',
      headers: { 'x-test': 'yes', 'content-type': 'application/json' },
      body: '{"a":1}',
    })
    expect(response.status).toBe(201)
    expect(response.header('content-type')).toBe('application/json')
    expect(response.header('Content-Type')).toBe('application/json')
    expect(response.header('x-many')).toBe('a, b')
    expect(JSON.parse(await response.text())).toMatchObject({
      method: 'POST',
      header: 'yes',
      body: '{"a":1}',
    })
    const missing = await sendRequest(`${base}/nowhere`, get)
    expect(missing.status).toBe(404)
    expect(await missing.text()).toBe('no such route')
  })

  test('a 204 has an empty body, and a large body arrives byte for byte', async () => {
    const empty = await sendRequest(`${base}/empty`, { method: 'DELETE', headers: {} })
    expect(empty.status).toBe(204)
    expect(await empty.text()).toBe('')
    const large = await sendRequest(`${base}/big`, get)
    expect(Buffer.from(await large.bytes()).equals(big)).toBe(true)
  })

  test('calls one after another reuse kept-alive connections', async () => {
    const ports = new Set<number>()
    for (let call = 0; call < 6; call += 1) {
      const answer = await sendRequest(`${base}/echo`, get)
      ports.add((JSON.parse(await answer.text()) as { port: number }).port)
    }
    // undici hands a connection back to its pool just after the body ends, so a call made at once
    // may open a second one; never one per call.
    expect(ports.size).toBeLessThanOrEqual(2)
  })

  test('a server that cannot be reached fails as fetch fails, with the cause', async () => {
    const error = await sendRequest(`http://127.0.0.1:${await closedPort()}/`, get).catch(
      (e: unknown) => e,
    )
    expect(error).toBeInstanceOf(TypeError)
    expect(error).toMatchObject({ message: 'fetch failed', cause: { code: 'ECONNREFUSED' } })
    await expect(sendRequest('ftp://127.0.0.1/', get)).rejects.toMatchObject({
      message: 'fetch failed',
    })
  })

  test("an aborted call rejects with its signal's reason, also while the body arrives", async () => {
    const stalled = await sendRequest(`${base}/stalled`, {
      ...get,
      signal: AbortSignal.timeout(100),
    })
    await expect(stalled.text()).rejects.toMatchObject({ name: 'TimeoutError' })
    const controller = new AbortController()
    controller.abort()
    await expect(
      sendRequest(`${base}/echo`, { ...get, signal: controller.signal }),
    ).rejects.toMatchObject({ name: 'AbortError' })
  })
})
