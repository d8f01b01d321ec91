// Shared by this app's integration tests: an in-process API on a free port with a tiny client.
import { sql } from 'kysely'
import { createLogger, type Logger } from '@baton/observability'
import { createDb, type Db } from '@baton/store'
import { eventually, tenantKey, test } from '@baton/testing'
import { composeApi, type ApiOptions, type ApiProcess } from '../../src/compose.ts'
import { loadConfig } from '../../src/config.ts'

export interface ApiHarness {
  readonly api: ApiProcess
  readonly base: string
  /** A key of the `default` namespace, which `post`, `get` and `untilRunning` send. */
  readonly key: string
  /** `{ authorization: 'Bearer <key>' }` for requests made without the helpers. */
  readonly auth: Record<string, string>
  /** Headers given here are sent after the key's, so a test can replace or drop it. */
  post(
    path: string,
    body: unknown,
    headers?: Record<string, string>,
  ): Promise<{ status: number; body: any }>
  get(path: string, headers?: Record<string, string>): Promise<{ status: number; body: any }>
  /** Resolves once the attempt is `running` (fails the test after `timeoutMs`, default 10 s). */
  untilRunning(attemptId: string, timeoutMs?: number): Promise<void>
}

/**
 * Starts the API against the test's database, Redis and prefix (plus `extraEnv`), logging to
 * `logger` (default: nowhere).
 */
export async function startApi(
  ctx: { readonly databaseUrl: string; readonly redisUrl: string; readonly queuePrefix: string },
  extraEnv: Record<string, string> = {},
  options: ApiOptions = {},
  logger: Logger = createLogger({ service: 'test', level: 'silent' }),
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
  const api = await composeApi(config, logger, options)
  const base = await api.app.listen({ host: '127.0.0.1', port: 0 })
  const keyDb = createDb({ connectionString: ctx.databaseUrl, maxConnections: 1 })
  const key = await tenantKey(keyDb, 'default').finally(() => keyDb.destroy())
  const auth = { authorization: `Bearer ${key}` }
  const parse = async (r: Response) => ({ status: r.status, body: (await r.json()) as any })
  const get = (path: string, headers: Record<string, string> = {}) =>
    fetch(`${base}${path}`, { headers: withoutEmpty({ ...auth, ...headers }) }).then(parse)
  return {
    api,
    base,
    key,
    auth,
    post: (path, body, headers = {}) =>
      fetch(`${base}${path}`, {
        method: 'POST',
        headers: withoutEmpty({ 'content-type': 'application/json', ...auth, ...headers }),
        body: typeof body === 'string' ? body : JSON.stringify(body),
      }).then(parse),
    get,
    async untilRunning(attemptId, timeoutMs = 10_000) {
      await eventually(
        async () =>
          (await get(`/v1/attempts/${attemptId}`)).body.status === 'running' ? true : undefined,
        { timeoutMs, what: `attempt ${attemptId} to run` },
      )
    },
  }
}

/** Headers with an empty value are left out: `{ authorization: '' }` sends no key. */
function withoutEmpty(headers: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(headers).filter(([, value]) => value !== ''))
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
