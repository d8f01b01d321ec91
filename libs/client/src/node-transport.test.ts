import { randomBytes } from 'node:crypto'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { nodeFetch } from './node-transport.ts'

// A plain HTTP server: these tests are about the transport's contract, which is `fetch`'s.
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

describe('the node:http transport', () => {
  test('sends the method, headers and body, and answers status, headers and body as fetch does', async () => {
    const response = await nodeFetch(`${base}/echo`, {
      method: 'POST',
      headers: { 'x-test': 'yes', 'content-type': 'application/json' },
      body: '{"a":1}',
    })
    expect(response.status).toBe(201)
    expect(response.statusText).toBe('Made')
    expect(response.ok).toBe(true)
    expect(response.headers.get('content-type')).toBe('application/json')
    expect(response.headers.get('x-many')).toBe('a, b')
    expect(await response.json()).toMatchObject({ method: 'POST', header: 'yes', body: '{"a":1}' })
    const missing = await nodeFetch(`${base}/nowhere`)
    expect(missing.status).toBe(404)
    expect(await missing.text()).toBe('no such route')
  })

  test('a 204 has an empty body, and a large body arrives byte for byte', async () => {
    const empty = await nodeFetch(`${base}/empty`, { method: 'DELETE' })
    expect(empty.status).toBe(204)
    expect(await empty.text()).toBe('')
    const large = await nodeFetch(`${base}/big`)
    expect(Buffer.from(await large.arrayBuffer()).equals(big)).toBe(true)
  })

  test('calls one after another reuse one kept-alive connection', async () => {
    const first = (await (await nodeFetch(`${base}/echo`)).json()) as { port: number }
    const second = (await (await nodeFetch(`${base}/echo`)).json()) as { port: number }
    expect(second.port).toBe(first.port)
  })

  test('a server that cannot be reached fails as fetch fails, with the cause', async () => {
    const error = await nodeFetch(`http://127.0.0.1:${await closedPort()}/`).catch(
      (e: unknown) => e,
    )
    expect(error).toBeInstanceOf(TypeError)
    expect(error).toMatchObject({ message: 'fetch failed', cause: { code: 'ECONNREFUSED' } })
    await expect(nodeFetch('ftp://127.0.0.1/')).rejects.toMatchObject({ message: 'fetch failed' })
  })

  test("an aborted call rejects with its signal's reason, also while the body arrives", async () => {
    await expect(
      nodeFetch(`${base}/stalled`, { signal: AbortSignal.timeout(100) }),
    ).rejects.toMatchObject({ name: 'TimeoutError' })
    const controller = new AbortController()
    controller.abort()
    await expect(nodeFetch(`${base}/echo`, { signal: controller.signal })).rejects.toMatchObject({
      name: 'AbortError',
    })
  })
})
