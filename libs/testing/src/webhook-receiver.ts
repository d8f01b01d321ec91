// A webhook endpoint as a tenant runs one: a real HTTP server that verifies each request's
// Standard Webhooks signature with the `standardwebhooks` library and deduplicates on
// `webhook-id`, and whose answers a test scripts (fail, time out, answer late, hold, redirect).
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { Webhook } from 'standardwebhooks'

/** One request as the receiver saw it. */
export interface ReceivedWebhook {
  readonly id: string
  /** Whether its signature verified against the secret (and its timestamp is recent). */
  readonly verified: boolean
  readonly body: string
  /** The `nth` request with this id (from 1). */
  readonly nth: number
}

/** How to answer a request: a status after an optional delay, a redirect, or no answer at all. */
export type WebhookAnswer =
  { readonly status: number; readonly delayMs?: number; readonly location?: string } | 'hold'

export interface WebhookReceiver {
  /** `http://127.0.0.1:<port>/hook`. */
  readonly url: string
  /** Every request, in arrival order. */
  readonly requests: readonly ReceivedWebhook[]
  /**
   * The receiver's one logical delivery per id: the body of the first verified request of each id
   * it answered 2xx to (a retry of an id already here is a duplicate the receiver ignores).
   */
  readonly processed: ReadonlyMap<string, unknown>
  /** Resolves once a request came that `until` accepts. */
  untilRequest(until: (r: ReceivedWebhook) => boolean, timeoutMs?: number): Promise<ReceivedWebhook>
  close(): Promise<void>
  isClosed(): boolean
}

/**
 * Starts a receiver on 127.0.0.1 that verifies with `secret` and answers as `answer` says for the
 * nth request of each id (by default 200 at once).
 */
export async function startWebhookReceiver(options: {
  readonly secret: string
  readonly answer?: (request: ReceivedWebhook) => WebhookAnswer
}): Promise<WebhookReceiver> {
  const verifier = new Webhook(options.secret)
  const requests: ReceivedWebhook[] = []
  const processed = new Map<string, unknown>()
  const seen = new Map<string, number>()
  const waiters = new Set<() => void>()
  let closed = false

  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = []
    req.on('data', (chunk: Buffer) => chunks.push(chunk))
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8')
      const id = header(req, 'webhook-id')
      const nth = (seen.get(id) ?? 0) + 1
      seen.set(id, nth)
      let verified = true
      let payload: unknown
      try {
        payload = verifier.verify(body, {
          'webhook-id': id,
          'webhook-timestamp': header(req, 'webhook-timestamp'),
          'webhook-signature': header(req, 'webhook-signature'),
        })
      } catch {
        verified = false
      }
      const received = { id, verified, body, nth }
      requests.push(received)
      for (const wake of waiters) wake()
      const answer = options.answer?.(received) ?? { status: 200 }
      if (answer === 'hold') return
      const send = () => {
        if (res.destroyed) return
        if (verified && answer.status >= 200 && answer.status < 300 && !processed.has(id))
          processed.set(id, payload)
        res.writeHead(
          answer.status,
          answer.location === undefined ? {} : { location: answer.location },
        )
        res.end()
      }
      if (answer.delayMs === undefined) send()
      else setTimeout(send, answer.delayMs).unref()
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo

  return {
    url: `http://127.0.0.1:${port}/hook`,
    requests,
    processed,
    untilRequest(until, timeoutMs = 60_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const found = requests.find(until)
          if (found === undefined) return
          waiters.delete(check)
          clearTimeout(timer)
          resolve(found)
        }
        const timer = setTimeout(() => {
          waiters.delete(check)
          reject(new Error(`no webhook request as expected within ${timeoutMs} ms`))
        }, timeoutMs)
        waiters.add(check)
        check()
      })
    },
    async close() {
      closed = true
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
    isClosed: () => closed,
  }
}

function header(req: IncomingMessage, name: string): string {
  const value = req.headers[name]
  return Array.isArray(value) ? value.join(',') : (value ?? '')
}
