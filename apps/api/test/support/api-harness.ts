// Shared by this app's integration tests: the API in this process (for tests that need its hooks:
// statement counts, tracing, the Fastify server), driven as the stack fixture drives an API process.
import { sql } from 'kysely'
import { createLogger, type Logger } from '@baton/observability'
import { createDb, type Db } from '@baton/store'
import {
  apiProcessEnv,
  batonHttp,
  tenantKey,
  test,
  type BatonHttp,
  type TestServices,
} from '@baton/testing'
import { composeApi, type ApiOptions, type ApiProcess } from '../../src/compose.ts'
import { loadConfig } from '../../src/config.ts'

export { delegationsPath as delegate } from '@baton/testing'

export interface ApiHarness extends BatonHttp {
  readonly api: ApiProcess
}

/**
 * Starts the API against the test's database, Redis and prefix (plus `extraEnv`), logging to
 * `logger` (default: nowhere).
 */
export async function startApi(
  ctx: TestServices,
  extraEnv: Record<string, string> = {},
  options: ApiOptions = {},
  logger: Logger = createLogger({ service: 'test', level: 'silent' }),
): Promise<ApiHarness> {
  const config = loadConfig(apiProcessEnv(ctx, { LOG_LEVEL: 'silent', ...extraEnv }))
  const api = await composeApi(config, logger, options)
  const base = await api.app.listen({ host: config.host, port: config.port })
  const keyDb = createDb({
    connectionString: ctx.databaseUrl,
    maxConnections: 1,
    preparedStatements: config.dbPreparedStatements,
  })
  const key = await tenantKey(keyDb, 'default').finally(() => keyDb.destroy())
  return { api, ...batonHttp(base, key) }
}

export interface ApiFixtures {
  /**
   * Starts an in-process API over the test's database, Redis and prefix (`extraEnv` and hooks as
   * `startApi` takes them); every one is tracked and closed after the test.
   */
  inProcessApi: (extraEnv?: Record<string, string>, options?: ApiOptions) => Promise<ApiHarness>
  /** An in-process API with the default environment. */
  api: ApiHarness
}

export const apiTest = test.extend<ApiFixtures>({
  inProcessApi: async ({ services }, use) => {
    const started: ApiProcess[] = []
    await use(async (extraEnv, options) => {
      const harness = await startApi(services, extraEnv, options)
      started.push(services.track(harness.api))
      return harness
    })
    for (const api of started) if (!api.isClosed()) await api.close()
  },
  api: async ({ inProcessApi }, use) => use(await inProcessApi()),
})

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
