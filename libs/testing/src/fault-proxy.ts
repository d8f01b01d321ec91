import { createConnection, createServer, type Server, type Socket } from 'node:net'

/**
 * A TCP proxy between Baton and a real Postgres or Redis that misbehaves on command, as a network
 * or a failing-over server does: it delays, stalls (stops forwarding while every socket stays
 * open), drops new connections, resets (RST) or cuts (FIN) the open ones, and resumes. It knows
 * nothing of either protocol: a test points Baton at `url` instead of the server's own.
 */
export interface FaultProxy {
  /** The target's URL with its host and port replaced by the proxy's. */
  readonly url: string
  readonly port: number
  /** Connections open through the proxy now. */
  readonly connections: number
  /** Every chunk from now on is held `ms` before it is forwarded, in order (0: none). */
  delay(ms: number): void
  /**
   * Stops forwarding in both directions; every socket stays open, and what is sent meanwhile waits
   * in the kernel's buffers. New connections are accepted and stalled too, unless `existingOnly`:
   * then only the connections open now hang (a half-dead connection) and new ones flow.
   */
  stall(options?: { readonly existingOnly?: boolean }): void
  /** New connections are reset as soon as they are accepted (the open ones are left alone). */
  drop(): void
  /** RST every open connection: its client sees ECONNRESET. */
  reset(): void
  /** Closes every open connection (FIN both ways): its client sees the connection end. */
  cut(): void
  /** Undoes `delay`, `stall` and `drop`: stalled connections forward what waited, then go on. */
  resume(): void
  /**
   * The next time a client sends a chunk containing `match` (a statement's parameter, say), that
   * chunk is forwarded and its connection's answers are held from then on: the server acts on the
   * request, the client hears nothing. The returned handle resolves once that happened; its
   * `reset()` then RSTs that one connection, so the client learns nothing of what the server did
   * (an answer lost after the fact), and `release()` lets the answers through.
   */
  holdAnswerAfter(match: string): Promise<HeldAnswer>
  close(): Promise<void>
  isClosed(): boolean
}

export interface HeldAnswer {
  reset(): void
  release(): void
}

interface Link {
  readonly client: Socket
  readonly server: Socket
  /** Forwarding stopped in both directions. */
  stalled: boolean
  /** Server → client stopped (a held answer). */
  answerHeld: boolean
  /** The last forward of each direction: delayed chunks keep their order. */
  toServer: Promise<void>
  toClient: Promise<void>
}

/**
 * Starts a proxy on 127.0.0.1 (a free port) in front of the server `targetUrl` names
 * (`postgres://…` or `redis://…`). Register it with `track()` so it is closed after the test.
 */
export async function startFaultProxy(targetUrl: string): Promise<FaultProxy> {
  const target = new URL(targetUrl)
  const targetHost = target.hostname
  const targetPort = Number(target.port)
  const links = new Set<Link>()
  const holds: { match: Buffer; resolve: (link: Link) => void }[] = []
  let delayMs = 0
  let stallNew = false
  let dropping = false
  let closed = false

  function setStalled(link: Link, stalled: boolean): void {
    link.stalled = stalled
    applyFlow(link)
  }

  function applyFlow(link: Link): void {
    if (link.stalled) {
      link.client.pause()
      link.server.pause()
      return
    }
    link.client.resume()
    if (link.answerHeld) link.server.pause()
    else link.server.resume()
  }

  function forward(link: Link, direction: 'toServer' | 'toClient', chunk: Buffer): void {
    const to = direction === 'toServer' ? link.server : link.client
    const wait = delayMs
    const write = (): void => {
      if (!to.destroyed) to.write(chunk)
    }
    if (wait === 0) {
      // Behind a delayed chunk still in flight, wait for it: order is kept.
      link[direction] = link[direction].then(write)
      return
    }
    link[direction] = link[direction].then(() =>
      new Promise<void>((resolve) => setTimeout(resolve, wait)).then(write),
    )
  }

  function open(client: Socket): void {
    if (dropping) {
      client.on('error', () => undefined)
      client.resetAndDestroy()
      return
    }
    const server = createConnection({ host: targetHost, port: targetPort })
    const link: Link = {
      client,
      server,
      stalled: stallNew,
      answerHeld: false,
      toServer: Promise.resolve(),
      toClient: Promise.resolve(),
    }
    links.add(link)
    const end = (): void => {
      links.delete(link)
      if (!client.destroyed) client.destroy()
      if (!server.destroyed) server.destroy()
    }
    client.on('error', end)
    server.on('error', () => {
      // The server went away: the client sees its connection reset, as it would directly.
      links.delete(link)
      if (!client.destroyed) client.resetAndDestroy()
    })
    client.on('close', end)
    server.on('close', end)
    client.on('data', (chunk: Buffer) => {
      forward(link, 'toServer', chunk)
      const at = holds.findIndex((h) => chunk.includes(h.match))
      if (at >= 0) {
        const [hold] = holds.splice(at, 1)
        link.answerHeld = true
        applyFlow(link)
        hold?.resolve(link)
      }
    })
    server.on('data', (chunk: Buffer) => forward(link, 'toClient', chunk))
    applyFlow(link)
  }

  const listener: Server = createServer({ pauseOnConnect: false }, open)
  await new Promise<void>((resolve, reject) => {
    listener.once('error', reject)
    listener.listen(0, '127.0.0.1', () => resolve())
  })
  const address = listener.address()
  if (address === null || typeof address === 'string') throw new Error('proxy has no port')
  const port = address.port
  const url = new URL(targetUrl)
  url.hostname = '127.0.0.1'
  url.port = String(port)

  const each = (act: (link: Link) => void): void => {
    for (const link of [...links]) act(link)
  }

  return {
    url: url.toString(),
    port,
    get connections() {
      return links.size
    },
    delay(ms) {
      delayMs = ms
    },
    stall(options = {}) {
      stallNew = options.existingOnly !== true
      each((link) => setStalled(link, true))
    },
    drop() {
      dropping = true
    },
    reset() {
      each((link) => {
        links.delete(link)
        link.client.resetAndDestroy()
        link.server.destroy()
      })
    },
    cut() {
      each((link) => {
        links.delete(link)
        link.client.destroy()
        link.server.destroy()
      })
    },
    resume() {
      delayMs = 0
      stallNew = false
      dropping = false
      each((link) => setStalled(link, false))
    },
    holdAnswerAfter(match) {
      return new Promise<HeldAnswer>((resolve) => {
        holds.push({
          match: Buffer.from(match),
          resolve: (link) =>
            resolve({
              reset() {
                links.delete(link)
                link.client.resetAndDestroy()
                link.server.destroy()
              },
              release() {
                link.answerHeld = false
                applyFlow(link)
              },
            }),
        })
      })
    },
    async close() {
      if (closed) return
      closed = true
      each((link) => {
        link.client.destroy()
        link.server.destroy()
      })
      links.clear()
      await new Promise<void>((resolve) => listener.close(() => resolve()))
    },
    isClosed: () => closed,
  }
}
