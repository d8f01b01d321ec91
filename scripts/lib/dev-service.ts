// What `npm run up` learned about one service it needs (Redis or Postgres), and small helpers the
// service checks share.
import { resolve } from 'node:path'
import type { OwnServer } from './own-service.ts'

export interface DevService {
  readonly name: 'redis' | 'postgres'
  /** One line for up's log: which path it took (using the URL's service, its own, embedded). */
  readonly said: string
  /** Set when up started the server itself: up stops it on Ctrl-C, after the API and workers. */
  readonly server?: OwnServer
}

/**
 * Where up keeps the servers it starts itself: BATON_DEV_DIR, else `.baton/dev` in the checkout
 * (git-ignored). Left in place on stop, so the next run finds its database again.
 */
export function devDirectory(env: NodeJS.ProcessEnv, repoRoot: string): string {
  return resolve(env.BATON_DEV_DIR ?? resolve(repoRoot, '.baton', 'dev'))
}

/** A URL for printing: no password. */
export function safeUrl(url: string): string {
  const u = new URL(url)
  if (u.password !== '') u.password = '***'
  return u.toString()
}

export function errorText(error: unknown): string {
  if (error instanceof AggregateError) return error.errors.map(errorText).join('; ')
  return error instanceof Error ? error.message || error.constructor.name : String(error)
}

/** Own servers only listen on this machine: a URL naming another host is never ours to start. */
export function isLocalHost(hostname: string): boolean {
  return ['127.0.0.1', 'localhost', '::1', '[::1]'].includes(hostname)
}

export function portOf(url: string, fallback: number): number {
  const port = new URL(url).port
  return port === '' ? fallback : Number(port)
}
