import { createHash, timingSafeEqual } from 'node:crypto'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { BatonError, ErrorCode } from '@baton/contracts'
import type { Logger } from '@baton/observability'
import { findLiveApiKey, looksLikeApiKey, type Db } from '@baton/store'
import { errorAnswer } from './errors.ts'

/**
 * Who is calling. Every route but `/healthz` and `/readyz` needs `Authorization: Bearer <key>`:
 * a namespace's key for the tenant routes (the caller is that namespace), the admin key for the
 * admin routes and the queue dashboard. Route handlers ask `callerNamespace(request)` and pass
 * the answer to the command service and the store; they never read a namespace from the body,
 * path or query.
 */
export type Caller =
  | { readonly kind: 'tenant'; readonly namespaceId: string; readonly keyId: string }
  | { readonly kind: 'admin' }

declare module 'fastify' {
  interface FastifyRequest {
    caller: Caller | null
  }
}

/** Paths anyone may call: the probes a load balancer or orchestrator uses. */
const PUBLIC_PATHS: ReadonlySet<string> = new Set(['/healthz', '/readyz'])
/**
 * A path no route serves that a browser asks for on its own. It answers the `404` every missing
 * path gets, without a key: a `401` there makes Chromium forget the credentials it was given for
 * the origin, and the dashboard open in it stops refreshing.
 */
const BROWSER_ICON = '/favicon.ico'
/**
 * Paths only the admin key opens: key and namespace management (Bearer), the ledger and queue
 * dashboards at `/admin` and below (Bearer, or Basic with the admin key as password, so a browser
 * can open them), and the Prometheus metrics (they name namespaces; a scraper sends the key as
 * Bearer credentials or Basic password).
 */
const ADMIN_PREFIXES = ['/v1/admin/', '/admin/']
const ADMIN_PATHS: ReadonlySet<string> = new Set(['/admin', '/metrics'])

export function callerNamespace(request: FastifyRequest): string {
  const caller = request.caller
  if (caller?.kind !== 'tenant') throw new Error('a tenant route ran without a tenant caller')
  return caller.namespaceId
}

/**
 * Verified keys, kept for `ttlMs` so the hot path does not read the ledger per request. Requests
 * that miss the cache for the same key at once (every client of a busy key, each time its entry
 * expires) share one read.
 */
export interface KeyResolver {
  resolve(
    key: string,
  ): Promise<{ readonly keyId: string; readonly namespaceId: string } | undefined>
  /** Forgets a key at once (this API revoked it); other API processes forget it within `ttlMs`. */
  forget(keyId: string): void
}

type ResolvedKey = { readonly keyId: string; readonly namespaceId: string } | undefined

export function createKeyResolver(db: Db, ttlMs: number): KeyResolver {
  const cache = new Map<string, { keyId: string; namespaceId: string; until: number }>()
  const reading = new Map<string, Promise<ResolvedKey>>()
  // Bumped by `forget`: a read that started before a revocation here does not cache its answer.
  let revocations = 0
  const MAX_ENTRIES = 10_000

  async function read(key: string): Promise<ResolvedKey> {
    const seen = revocations
    const found = await findLiveApiKey(db, key)
    if (found !== undefined && ttlMs > 0 && seen === revocations) {
      if (cache.size >= MAX_ENTRIES) cache.clear()
      cache.set(key, { ...found, until: Date.now() + ttlMs })
    }
    return found
  }

  return {
    resolve(key) {
      const hit = cache.get(key)
      if (hit !== undefined && hit.until > Date.now()) return Promise.resolve(hit)
      cache.delete(key)
      const pending = reading.get(key)
      if (pending !== undefined) return pending
      const started: Promise<ResolvedKey> = read(key).finally(() => {
        if (reading.get(key) === started) reading.delete(key)
      })
      reading.set(key, started)
      return started
    },
    forget(keyId) {
      revocations += 1
      reading.clear()
      for (const [key, entry] of cache) if (entry.keyId === keyId) cache.delete(key)
    },
  }
}

/**
 * Installs the authentication hook: it runs before routing decides anything else, so a request
 * without a valid key learns nothing (not even whether a path exists) and writes nothing.
 */
export function installAuthentication(
  app: FastifyInstance,
  deps: {
    readonly keys: KeyResolver
    readonly adminApiKey: string | undefined
    readonly logger: Logger
  },
): void {
  const adminDigest = deps.adminApiKey === undefined ? undefined : sha256(deps.adminApiKey)
  app.decorateRequest('caller', null)
  app.addHook('onRequest', async (request: FastifyRequest, reply: FastifyReply) => {
    // The route the router matched (its pattern), not the raw URL: an encoded or oddly spelled
    // path cannot slip past the class of the route it reaches. No route: a tenant's 404.
    const path = request.routeOptions.url ?? ''
    if (PUBLIC_PATHS.has(path)) return undefined
    if (path === '' && request.url.split('?')[0] === BROWSER_ICON) return undefined
    const key = bearerKey(request.headers.authorization)
    const admin = ADMIN_PATHS.has(path) || ADMIN_PREFIXES.some((prefix) => path.startsWith(prefix))
    if (admin) {
      // A browser opening the dashboards answers a Basic challenge: the admin key as its password.
      const browser = path === '/admin' || path.startsWith('/admin/')
      const presented = key ?? basicPassword(request.headers.authorization)
      if (adminDigest === undefined) {
        return refuse(reply, 'no admin key is configured on this API (ADMIN_API_KEY)', browser)
      }
      if (presented === undefined || !timingSafeEqual(sha256(presented), adminDigest)) {
        return refuse(reply, 'this route needs the admin key', browser)
      }
      request.caller = { kind: 'admin' }
      return undefined
    }
    if (key === undefined) return refuse(reply, 'send Authorization: Bearer <API key>')
    const found = looksLikeApiKey(key) ? await deps.keys.resolve(key) : undefined
    if (found === undefined) return refuse(reply, 'the API key is unknown or revoked')
    request.caller = { kind: 'tenant', ...found }
    return undefined
  })
}

/** The key of an `Authorization: Bearer <key>` header (scheme case-insensitive), or undefined. */
export function bearerKey(header: string | undefined): string | undefined {
  if (header === undefined) return undefined
  const match = /^Bearer +([\x21-\x7e]+) *$/i.exec(header)
  return match?.[1]
}

/**
 * Answers 401 from the hook itself rather than throwing: plugins with error handlers of their own
 * (the queue dashboard) would otherwise render the refusal in their shape.
 */
function refuse(reply: FastifyReply, message: string, basic = false): FastifyReply {
  const { status, body } = errorAnswer(new BatonError(ErrorCode.Unauthorized, message))
  const challenge = basic ? 'Basic realm="baton-admin", charset="UTF-8"' : 'Bearer realm="baton"'
  return reply.status(status).header('www-authenticate', challenge).send(body)
}

/** The password of an `Authorization: Basic …` header (any user name), or undefined. */
function basicPassword(header: string | undefined): string | undefined {
  const match = /^Basic +([A-Za-z0-9+/]+={0,2}) *$/i.exec(header ?? '')
  if (match?.[1] === undefined) return undefined
  const decoded = Buffer.from(match[1], 'base64').toString('utf8')
  const colon = decoded.indexOf(':')
  return colon < 0 ? undefined : decoded.slice(colon + 1)
}

function sha256(text: string): Buffer {
  return createHash('sha256').update(text, 'utf8').digest()
}
