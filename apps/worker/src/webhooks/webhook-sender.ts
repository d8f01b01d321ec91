import { lookup as dnsLookup, type LookupAddress } from 'node:dns'
import type { LookupFunction } from 'node:net'
import { Webhook } from 'standardwebhooks'
import { Agent, request } from 'undici'
import {
  WebhookLimits,
  refusedAddress,
  webhookUrlRefusal,
  type WebhookDestinationPolicy,
} from '@baton/contracts'

/** How one POST to an endpoint ended. */
export type SendResult =
  /** A 2xx: the endpoint acknowledged the event. */
  | { readonly kind: 'acknowledged'; readonly status: number }
  /** Not acknowledged (a non-2xx answer, a timeout, a network failure): worth another try. */
  | { readonly kind: 'unacknowledged'; readonly status: number | null; readonly error: string }
  /**
   * Never worth another try: a destination the policy refuses (nothing was sent) or a redirect
   * (not followed).
   */
  | { readonly kind: 'refused'; readonly status: number | null; readonly error: string }

export interface WebhookSender {
  /** POSTs `body` signed for `endpoint`, with the stable `webhook-id` `id`. */
  send(
    endpoint: { readonly url: string; readonly secret: string },
    id: string,
    body: string,
    signal: AbortSignal,
  ): Promise<SendResult>
  close(): Promise<void>
}

/** Marks the refusal of a resolved address, so that it is told from a network failure. */
class DestinationRefused extends Error {
  readonly code = 'WEBHOOK_URL_REFUSED'
}

/**
 * The one way Baton calls a tenant's endpoint: undici with no redirect followed (a 3xx is a
 * refusal), the connection, the answer's headers and its body each bounded by `timeoutMs` and the
 * whole call by it too, at most `WebhookLimits.responseBodyBytes` of the answer read. The
 * destination is checked against the policy before the call (the URL) and at connection time
 * (every address the host name resolves to, so a name that points at a private address is
 * refused, not only a literal one). The body is signed as Standard Webhooks says
 * (`webhook-id`, `webhook-timestamp`, `webhook-signature: v1,<HMAC-SHA256>`) by the
 * `standardwebhooks` library.
 */
export function createWebhookSender(options: {
  readonly policy: WebhookDestinationPolicy
  readonly timeoutMs: number
}): WebhookSender {
  const { policy, timeoutMs } = options
  const agent = new Agent({
    connect: { timeout: timeoutMs, lookup: checkedLookup(policy) },
    headersTimeout: timeoutMs,
    bodyTimeout: timeoutMs,
  })
  return {
    async send(endpoint, id, body, signal) {
      const refusal = webhookUrlRefusal(endpoint.url, policy)
      if (refusal !== undefined)
        return { kind: 'refused', status: null, error: `destination refused: ${refusal}` }
      const now = new Date()
      const signature = new Webhook(endpoint.secret).sign(id, now, body)
      const bounded = AbortSignal.any([signal, AbortSignal.timeout(timeoutMs)])
      try {
        const answer = await request(endpoint.url, {
          method: 'POST',
          dispatcher: agent,
          headers: {
            'content-type': 'application/json',
            'user-agent': 'Baton-Webhooks',
            'webhook-id': id,
            'webhook-timestamp': String(Math.floor(now.getTime() / 1000)),
            'webhook-signature': signature,
          },
          body,
          signal: bounded,
        })
        await answer.body
          .dump({ limit: WebhookLimits.responseBodyBytes, signal: bounded })
          .catch(() => undefined)
        const status = answer.statusCode
        if (status >= 200 && status < 300) return { kind: 'acknowledged', status }
        if (status >= 300 && status < 400)
          return { kind: 'refused', status, error: `redirect (${status}) not followed` }
        return { kind: 'unacknowledged', status, error: `answered ${status}` }
      } catch (error) {
        const refused = refusalIn(error)
        if (refused !== undefined)
          return { kind: 'refused', status: null, error: `destination refused: ${refused}` }
        if (bounded.aborted && !signal.aborted)
          return { kind: 'unacknowledged', status: null, error: `no answer within ${timeoutMs} ms` }
        return { kind: 'unacknowledged', status: null, error: describe(error) }
      }
    },
    close: () => agent.close(),
  }
}

/**
 * A `net.connect` lookup that resolves the host and refuses it when any of its addresses is one
 * the policy refuses, so the connection is made only to addresses that were checked.
 */
function checkedLookup(policy: WebhookDestinationPolicy): LookupFunction {
  return (hostname, options, callback) => {
    dnsLookup(hostname, { ...options, all: true }, (error, addresses: LookupAddress[]) => {
      if (error !== null) {
        callback(error, '', 0)
        return
      }
      const refusal = addresses
        .map((a) => refusedAddress(a.address, policy))
        .find((r) => r !== undefined)
      const first = addresses[0]
      if (refusal !== undefined || first === undefined) {
        callback(new DestinationRefused(refusal ?? `${hostname} has no address`), '', 0)
        return
      }
      if (options.all === true) {
        ;(callback as unknown as (e: null, all: LookupAddress[]) => void)(null, addresses)
        return
      }
      callback(null, first.address, first.family)
    })
  }
}

function refusalIn(error: unknown): string | undefined {
  for (let e: unknown = error, depth = 0; e instanceof Error && depth < 5; depth += 1) {
    if (e instanceof DestinationRefused) return e.message
    e = e.cause
  }
  return undefined
}

function describe(error: unknown): string {
  const code = (error as { code?: unknown } | undefined)?.code
  const message = error instanceof Error ? error.message : String(error)
  return typeof code === 'string' ? `${code}: ${message}` : message
}
