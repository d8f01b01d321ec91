// Shared by this app's integration tests: an in-process API on a free port with a tiny client.
import { sql } from 'kysely'
import { createLogger } from '@baton/observability'
import type { Db } from '@baton/store'
import { eventually, test } from '@baton/testing'
import { composeApi, type ApiOptions, type ApiProcess } from './compose.ts'
import { loadConfig } from './config.ts'

export interface ApiHarness {
  readonly api: ApiProcess
  readonly base: string
  post(
    path: string,
    body: unknown,
    headers?: Record<string, string>,
  ): Promise<{ status: number; body: any }>
  get(path: string): Promise<{ status: number; body: any }>
  /** Resolves once the attempt is `running` (fails the test after `timeoutMs`, default 10 s). */
  untilRunning(attemptId: string, timeoutMs?: number): Promise<void>
}

/** Starts the API against the test's database, Redis and prefix (plus `extraEnv`). */
export async function startApi(
  ctx: { readonly databaseUrl: string; readonly redisUrl: string; readonly queuePrefix: string },
  extraEnv: Record<string, string> = {},
  options: ApiOptions = {},
): Promise<ApiHarness> {
  const config = loadConfig({
    DATABASE_URL: ctx.databaseUrl,
    REDIS_URL: ctx.redisUrl,
    QUEUE_PREFIX: ctx.queuePrefix,
    PORT: '0',
    BODY_LIMIT_BYTES: '65536',
    LOG_LEVEL: 'silent',
    ...extraEnv,
  })
  const api = await composeApi(config, createLogger({ service: 'test', level: 'silent' }), options)
  const base = await api.app.listen({ host: '127.0.0.1', port: 0 })
  const parse = async (r: Response) => ({ status: r.status, body: (await r.json()) as any })
  return {
    api,
    base,
    post: (path, body, headers = {}) =>
      fetch(`${base}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body: typeof body === 'string' ? body : JSON.stringify(body),
      }).then(parse),
    get: (path) => fetch(`${base}${path}`).then(parse),
    async untilRunning(attemptId, timeoutMs = 10_000) {
      await eventually(
        async () =>
          (await fetch(`${base}/v1/attempts/${attemptId}`).then(parse)).body.status === 'running'
            ? true
            : undefined,
        { timeoutMs, what: `attempt ${attemptId} to run` },
      )
    },
  }
}

/** A test given an in-process API (`api`) over its database, Redis and prefix, closed after it. */
export const apiTest = test.extend<{ api: ApiHarness }>({
  api: async ({ databaseUrl, redisUrl, queuePrefix, track }, use) => {
    const harness = await startApi({ databaseUrl, redisUrl, queuePrefix })
    track(harness.api)
    await use(harness)
    await harness.api.close()
  },
})

/** The delegations path of a session. */
export const delegate = (session: string): string => `/v1/sessions/${session}/delegations`

/** Ledger row counts, to show that a refused request wrote nothing. */
export interface RowCounts {
  readonly sessions: number
  readonly agents: number
  readonly attempts: number
  readonly transitions: number
  readonly steering: number
  readonly cancels: number
}

export async function rowCounts(db: Db): Promise<RowCounts> {
  const r = await sql<RowCounts>`
    select (select count(*)::int from sessions) as sessions,
           (select count(*)::int from agents) as agents,
           (select count(*)::int from attempts) as attempts,
           (select count(*)::int from attempt_transitions) as transitions,
           (select count(*)::int from attempt_messages) as steering,
           (select count(*)::int from attempts where cancel_requested_at is not null) as cancels
  `.execute(db)
  const counts = r.rows[0]
  if (counts === undefined) throw new Error('row counts query answered no row')
  return counts
}
