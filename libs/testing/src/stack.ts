// A running Baton for a scenario test: the API and workers as real processes over the test file's
// database, Redis and prefix, a key of the `default` namespace, and the steps scenarios repeat
// (start, kill and restart a worker; delegate a child and go on once it runs; wait on the ledger).
import type { AttemptRecord, Db } from '@baton/store'
import { batonHttp, type BatonHttp } from './baton-http.ts'
import { untilAttempt } from './ledger.ts'
import {
  apiAddress,
  apiProcessEnv,
  startServiceProcess,
  workerProcessEnv,
  type ServiceProcess,
  type TestServices,
} from './processes.ts'
import { tenantKey } from './tenants.ts'

export interface StackOptions {
  /** Whether to start the API (default true); without it the stack is a fleet of workers. */
  readonly api?: boolean
  /** Worker processes started with the stack (default 1). */
  readonly workers?: number
  /** Environment of every process the stack starts, API and workers (e.g. `SUBAGENTS_DIR`). */
  readonly env?: Record<string, string>
  /** The API's environment on top of `env` (over `apiProcessEnv`). */
  readonly apiEnv?: Record<string, string>
  /** Every worker's environment on top of `env` (over `workerProcessEnv`). */
  readonly workerEnv?: Record<string, string>
  /** Another Redis than the file's, e.g. a private `redis-server` the test restarts. */
  readonly redisUrl?: string
  /** How long a process may take to be ready (default: `startServiceProcess`'s). */
  readonly readyTimeoutMs?: number
}

/** Worker processes of one test; every one is tracked and stopped after it. */
export interface BatonFleet {
  /** The workers alive, oldest first. */
  readonly workers: readonly ServiceProcess[]
  /** The oldest worker alive (throws when there is none). */
  readonly worker: ServiceProcess
  /** Starts one more worker (`env` on top of the stack's) and resolves once it is ready. */
  startWorker(env?: Record<string, string>): Promise<ServiceProcess>
  /** Sends `signal` (default SIGKILL) to `worker` (default the oldest) and awaits its exit. */
  killWorker(worker?: ServiceProcess, signal?: NodeJS.Signals): Promise<number | NodeJS.Signals>
  /** Kills `worker` (as `killWorker`) and starts a fresh one in its place. */
  restartWorker(worker?: ServiceProcess, signal?: NodeJS.Signals): Promise<ServiceProcess>
  /** The attempt's ledger record once it reaches `until` (see `untilAttempt`). */
  untilAttempt(
    attemptId: string,
    until: AttemptRecord['status'] | ((record: AttemptRecord) => boolean),
    options?: { readonly timeoutMs?: number },
  ): Promise<AttemptRecord>
  /** Stops every worker, then the API: SIGTERM, and SIGKILL after the grace period. */
  close(): Promise<void>
  isClosed(): boolean
}

/** The API process and its workers, driven over HTTP (`post`, `get`, `client`). */
export interface BatonStack extends BatonFleet, BatonHttp {
  readonly api: ServiceProcess
  /** Sends `signal` (default SIGKILL) to the API and awaits its exit. */
  killApi(signal?: NodeJS.Signals): Promise<number | NodeJS.Signals>
  /** Starts a new API process (after `killApi`); `base` and `client` then point at it. */
  startApi(): Promise<ServiceProcess>
}

export interface StartBaton {
  (options: StackOptions & { readonly api: false }): Promise<BatonFleet>
  (options?: StackOptions): Promise<BatonStack>
}

/** What the stack runs on: the test's services and its `track`. */
export interface StackServices extends TestServices {
  readonly db: Db
  readonly track: <T extends { close(): Promise<unknown>; isClosed(): boolean }>(resource: T) => T
}

/** Starts the API (unless `api: false`) and the workers; `close` stops them. */
export async function startStack(
  services: StackServices,
  options: StackOptions = {},
): Promise<BatonStack> {
  const ctx = { ...services, redisUrl: options.redisUrl ?? services.redisUrl }
  const { track, db } = services
  const readyOptions =
    options.readyTimeoutMs === undefined ? {} : { timeoutMs: options.readyTimeoutMs }
  const workers: ServiceProcess[] = []
  let api: ServiceProcess | undefined
  let http: BatonHttp | undefined
  let key: string | undefined

  const startApi = async (): Promise<ServiceProcess> => {
    const env = apiProcessEnv(ctx, { ...options.env, ...options.apiEnv })
    const started = track(await startServiceProcess('api', env, readyOptions))
    api = started
    http = batonHttp(apiAddress(started), key ?? (key = await tenantKey(db, 'default')))
    return started
  }
  const startWorker = async (env: Record<string, string> = {}): Promise<ServiceProcess> => {
    const started = track(
      await startServiceProcess(
        'worker',
        workerProcessEnv(ctx, { ...options.env, ...options.workerEnv, ...env }),
        readyOptions,
      ),
    )
    workers.push(started)
    return started
  }
  const killWorker = async (worker = workers[0], signal: NodeJS.Signals = 'SIGKILL') => {
    if (worker === undefined) throw new Error('no worker to kill')
    worker.kill(signal)
    const exit = await worker.exited
    workers.splice(workers.indexOf(worker), 1)
    return exit
  }
  const started = (): BatonHttp => {
    if (http === undefined) throw new Error('this stack has no API running')
    return http
  }

  if (options.api !== false) await startApi()
  for (let i = 0; i < (options.workers ?? 1); i += 1) await startWorker()

  return {
    get workers() {
      return workers
    },
    get worker() {
      const [oldest] = workers
      if (oldest === undefined) throw new Error('this stack has no worker running')
      return oldest
    },
    startWorker,
    killWorker,
    async restartWorker(worker, signal) {
      await killWorker(worker, signal)
      return startWorker()
    },
    untilAttempt: (attemptId, until, untilOptions) =>
      untilAttempt(db, attemptId, until, untilOptions),
    get api() {
      if (api === undefined) throw new Error('this stack has no API')
      return api
    },
    async killApi(signal: NodeJS.Signals = 'SIGKILL') {
      if (api === undefined) throw new Error('this stack has no API')
      api.kill(signal)
      http = undefined
      return api.exited
    },
    startApi,
    get base() {
      return started().base
    },
    get key() {
      return started().key
    },
    get auth() {
      return started().auth
    },
    get client() {
      return started().client
    },
    post: (path, body, headers) => started().post(path, body, headers),
    get: (path, headers) => started().get(path, headers),
    untilRunning: (attemptId, timeoutMs) => started().untilRunning(attemptId, timeoutMs),
    delegateRunning: (sessionId, prompt, timeoutMs) =>
      started().delegateRunning(sessionId, prompt, timeoutMs),
    async close() {
      // Workers first: a worker stopping cancels its children and commits through the ledger,
      // which needs no API; the API goes last so that a test's pending waits still get answers.
      await Promise.all(workers.map((worker) => worker.close()))
      await api?.close()
    },
    isClosed: () => workers.every((w) => w.isClosed()) && (api?.isClosed() ?? true),
  }
}
