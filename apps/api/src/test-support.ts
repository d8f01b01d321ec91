// Shared by this app's integration tests: an in-process API on a free port with a tiny client.
import { createLogger } from '@baton/observability'
import { eventually } from '@baton/testing'
import { composeApi, type ApiProcess } from './compose.ts'
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
  const api = await composeApi(config, createLogger({ service: 'test', level: 'silent' }))
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
