// A running Baton's HTTP side as a test drives it: JSON requests that carry the namespace key, the
// typed client, and the wait every scenario writes (delegate, then go on once the child runs).
// Shared by the stack fixture (the API as a process) and the API's in-process harness.
import { createBatonClient, type BatonClient } from '@baton/client'
import { eventually } from './eventually.ts'

/** An answer as a test asserts on it: the status and the parsed JSON body, untyped. */
export interface JsonAnswer {
  readonly status: number
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests assert on the raw body
  readonly body: any
}

export interface BatonHttp {
  /** The API's URL, `http://127.0.0.1:<port>`. */
  readonly base: string
  /** A key of the `default` namespace, which the helpers and `client` send. */
  readonly key: string
  /** `{ authorization: 'Bearer <key>' }` for requests made without the helpers. */
  readonly auth: Record<string, string>
  /** The typed client, with `key`. */
  readonly client: BatonClient
  /** Headers given here are sent after the key's, so a test can replace or drop it (`''`). */
  readonly post: (
    path: string,
    body: unknown,
    headers?: Record<string, string>,
  ) => Promise<JsonAnswer>
  readonly get: (path: string, headers?: Record<string, string>) => Promise<JsonAnswer>
  /** Resolves once the attempt is `running` (fails the test after `timeoutMs`, default 10 s). */
  readonly untilRunning: (attemptId: string, timeoutMs?: number) => Promise<void>
  /**
   * Delegates to the `scripted` subagent in `sessionId` (`prompt` as given, or an object as its
   * JSON script, by default `{ hang: true }`) and resolves once its child runs.
   */
  readonly delegateRunning: (
    sessionId: string,
    prompt?: string | object,
    timeoutMs?: number,
  ) => Promise<{ readonly attemptId: string; readonly agentId: string }>
}

/** The delegations path of a session. */
export const delegationsPath = (sessionId: string): string =>
  `/v1/sessions/${sessionId}/delegations`

/** The HTTP side of the API at `base`, as the holder of `key`. */
export function batonHttp(base: string, key: string): BatonHttp {
  const auth = { authorization: `Bearer ${key}` }
  const parse = async (r: Response): Promise<JsonAnswer> => ({
    status: r.status,
    body: await r.json(),
  })
  const get = (path: string, headers: Record<string, string> = {}) =>
    fetch(`${base}${path}`, { headers: withoutEmpty({ ...auth, ...headers }) }).then(parse)
  const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
    fetch(`${base}${path}`, {
      method: 'POST',
      headers: withoutEmpty({ 'content-type': 'application/json', ...auth, ...headers }),
      body: typeof body === 'string' ? body : JSON.stringify(body),
    }).then(parse)
  const untilRunning = async (attemptId: string, timeoutMs = 10_000): Promise<void> => {
    await eventually(
      async () =>
        ((await get(`/v1/attempts/${attemptId}`)).body as { status?: string }).status === 'running'
          ? true
          : undefined,
      { timeoutMs, what: `attempt ${attemptId} to run` },
    )
  }
  return {
    base,
    key,
    auth,
    client: createBatonClient({ baseUrl: base, apiKey: key }),
    post,
    get,
    untilRunning,
    delegateRunning: async (sessionId, prompt = { hang: true }, timeoutMs) => {
      const text = typeof prompt === 'string' ? prompt : JSON.stringify(prompt)
      const accepted = await post(delegationsPath(sessionId), { name: 'scripted', prompt: text })
      if (accepted.status !== 202)
        throw new Error(`delegation refused: ${accepted.status} ${JSON.stringify(accepted.body)}`)
      const { attemptId, agentId } = accepted.body as { attemptId: string; agentId: string }
      await untilRunning(attemptId, timeoutMs)
      return { attemptId, agentId }
    },
  }
}

/** Headers with an empty value are left out: `{ authorization: '' }` sends no key. */
function withoutEmpty(headers: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(headers).filter(([, value]) => value !== ''))
}
