import { BlockList, isIP } from 'node:net'
import { z } from 'zod'
import { isoTimeSchema, sessionIdSchema, uuidSchema } from './delegation.ts'
import { deliveredContentSchema } from './continuation.ts'

/**
 * Push delivery: a namespace or a session registers one webhook URL; terminal attempts and
 * admitted continuations are POSTed to it, signed as the Standard Webhooks specification says.
 */
export const WEBHOOK_EVENT_TYPES = ['attempt.terminal', 'continuation.admitted'] as const
export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number]

/**
 * A delivery's states: `pending` (due at `nextAttemptAt`), `sending` (a worker holds it under a
 * lease), `delivered` (the endpoint answered 2xx), `failed` (refused destination, redirect, or out
 * of attempts or age: recorded, not retried), `superseded` (a continuation that was consumed or
 * suppressed by other means before the endpoint acknowledged it).
 */
export const WEBHOOK_DELIVERY_STATES = [
  'pending',
  'sending',
  'delivered',
  'failed',
  'superseded',
] as const
export type WebhookDeliveryState = (typeof WEBHOOK_DELIVERY_STATES)[number]

export const WebhookLimits = {
  urlChars: 2048,
  /** The response body Baton reads from an endpoint, at most (the rest is discarded). */
  responseBodyBytes: 64 * 1024,
} as const

/** A Standard Webhooks symmetric secret: `whsec_` and the base64 of 24 to 64 random bytes. */
export const webhookSecretSchema = z
  .string()
  .regex(/^whsec_[A-Za-z0-9+/]{32,86}={0,2}$/, 'whsec_ and the base64 of 24 to 64 bytes')
  .meta({ description: 'A Standard Webhooks secret: `whsec_` and base64 of 24 to 64 bytes' })

export const registerWebhookRequestSchema = z
  .strictObject({
    url: z.url({ protocol: /^https?$/ }).max(WebhookLimits.urlChars),
    secret: webhookSecretSchema.optional(),
  })
  .meta({ id: 'RegisterWebhookRequest' })
export type RegisterWebhookRequest = z.infer<typeof registerWebhookRequestSchema>

export const webhookViewSchema = z
  .object({
    url: z.string(),
    /** The session it serves; null for the namespace's webhook. */
    sessionId: sessionIdSchema.nullable(),
    createdAt: isoTimeSchema,
    updatedAt: isoTimeSchema,
  })
  .meta({ id: 'Webhook' })
export type WebhookView = z.infer<typeof webhookViewSchema>

/** The answer of a registration: the only one that shows the secret. */
export const registeredWebhookSchema = webhookViewSchema
  .extend({ secret: webhookSecretSchema })
  .meta({ id: 'RegisteredWebhook' })
export type RegisteredWebhook = z.infer<typeof registeredWebhookSchema>

export const webhookDeliveryViewSchema = z
  .object({
    /** The `webhook-id` of every try: the same on each retry, for the receiver to dedupe on. */
    webhookId: z.string(),
    type: z.enum(WEBHOOK_EVENT_TYPES),
    sessionId: sessionIdSchema,
    attemptId: uuidSchema,
    state: z.enum(WEBHOOK_DELIVERY_STATES),
    /** Tries started so far. */
    tries: z.number().int().min(0),
    nextTryAt: isoTimeSchema.nullable(),
    createdAt: isoTimeSchema,
    deliveredAt: isoTimeSchema.nullable(),
    /** The endpoint's last HTTP status, if it answered. */
    lastStatus: z.number().int().nullable(),
    /** Why the last try did not deliver (or why the delivery failed or was superseded). */
    lastError: z.string().nullable(),
  })
  .meta({ id: 'WebhookDelivery' })
export type WebhookDeliveryView = z.infer<typeof webhookDeliveryViewSchema>

export const webhookDeliveryListSchema = z
  .object({ deliveries: z.array(webhookDeliveryViewSchema) })
  .meta({ id: 'WebhookDeliveryList' })

export const webhookDeliveryQuerySchema = z.strictObject({
  sessionId: sessionIdSchema.optional(),
  state: z.enum(WEBHOOK_DELIVERY_STATES).optional(),
  limit: z.coerce.number().int().min(1).max(500).default(100),
})

/** The body of every POST: `type`, the event's `timestamp` (stable across tries), `data`. */
export const webhookPayloadSchema = z.discriminatedUnion('type', [
  z.object({
    type: z.literal('attempt.terminal'),
    timestamp: isoTimeSchema,
    /** The attempt's public view (`GET /v1/attempts/:attemptId`). */
    data: z.looseObject({ attemptId: uuidSchema, sessionId: sessionIdSchema }),
  }),
  z.object({
    type: z.literal('continuation.admitted'),
    timestamp: isoTimeSchema,
    data: z.object({
      runId: uuidSchema,
      sessionId: sessionIdSchema,
      attemptId: uuidSchema,
      receipt: z.string(),
      input: z.string(),
      /** Null when the content would pass the body bound: read it with `GET /v1/artifacts/:id`. */
      content: deliveredContentSchema.nullable(),
    }),
  }),
])
export type WebhookPayload = z.infer<typeof webhookPayloadSchema>

/** Where webhooks may go: the operator's host allowlist, and whether private addresses may. */
export interface WebhookDestinationPolicy {
  /** `*` (any host), `host.example` (that host) or `*.example` (its subdomains). */
  readonly allowedHosts: readonly string[]
  /** Private, loopback and link-local addresses (refused unless set). */
  readonly allowPrivate: boolean
}

/** The settings of the policy, the same in the API (registration) and the worker (delivery). */
export const webhookPolicyEnvShape = {
  WEBHOOK_ALLOWED_HOSTS: z.string().default('*'),
  WEBHOOK_ALLOW_PRIVATE: z.enum(['true', 'false']).default('false'),
}

export function webhookDestinationPolicy(env: {
  readonly WEBHOOK_ALLOWED_HOSTS: string
  readonly WEBHOOK_ALLOW_PRIVATE: 'true' | 'false'
}): WebhookDestinationPolicy {
  return Object.freeze({
    allowedHosts: Object.freeze(
      env.WEBHOOK_ALLOWED_HOSTS.split(',')
        .map((h) => h.trim().toLowerCase())
        .filter((h) => h !== ''),
    ),
    allowPrivate: env.WEBHOOK_ALLOW_PRIVATE === 'true',
  })
}

/**
 * Why a webhook URL is refused by the policy before any lookup, or undefined: not http(s),
 * credentials in it, a host outside the allowlist, or a literal private address. A host name's
 * addresses are checked when it is resolved, at each try (`refusedAddress`).
 */
export function webhookUrlRefusal(
  url: string,
  policy: WebhookDestinationPolicy,
): string | undefined {
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    return 'not a URL'
  }
  if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:') return 'not http or https'
  if (parsed.username !== '' || parsed.password !== '') return 'credentials in the URL'
  const host = parsed.hostname.toLowerCase().replace(/^\[(.*)\]$/, '$1')
  if (!hostAllowed(host, policy.allowedHosts)) return `host ${host} is not in the allowlist`
  if (isIP(host) !== 0) return refusedAddress(host, policy)
  return undefined
}

function hostAllowed(host: string, allowed: readonly string[]): boolean {
  return allowed.some(
    (pattern) =>
      pattern === '*' ||
      pattern === host ||
      (pattern.startsWith('*.') && host.endsWith(pattern.slice(1))),
  )
}

/** Private, loopback, link-local, unspecified, shared, multicast and reserved ranges. */
const PRIVATE = new BlockList()
for (const [net, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const)
  PRIVATE.addSubnet(net, prefix, 'ipv4')
for (const [net, prefix] of [
  ['::', 128],
  ['::1', 128],
  ['fc00::', 7],
  ['fe80::', 10],
  ['ff00::', 8],
] as const)
  PRIVATE.addSubnet(net, prefix, 'ipv6')

/** Why a resolved address is refused by the policy, or undefined. */
export function refusedAddress(
  address: string,
  policy: WebhookDestinationPolicy,
): string | undefined {
  if (policy.allowPrivate) return undefined
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)?.[1]
  const v4 = mapped ?? (isIP(address) === 4 ? address : undefined)
  const blocked = v4 === undefined ? PRIVATE.check(address, 'ipv6') : PRIVATE.check(v4, 'ipv4')
  return blocked ? `address ${address} is private, loopback or link-local` : undefined
}
