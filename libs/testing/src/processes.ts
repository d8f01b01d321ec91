// The one launcher of Baton apps as real child processes, shared by the tests that kill processes,
// `npm run up`, bench and chaos: each used to spawn `apps/<app>/src/main.ts` and scan its output
// for a hard-coded ready line with its own small differences.
import { spawn, type ChildProcess } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { API_READY_MESSAGE, WORKER_READY_MESSAGE } from '@baton/observability'

export const REPO_ROOT = fileURLToPath(new URL('../../../', import.meta.url))

export type BatonApp = 'api' | 'worker'

export const READY_MESSAGES: Readonly<Record<BatonApp, string>> = {
  api: API_READY_MESSAGE,
  worker: WORKER_READY_MESSAGE,
}

export interface AppProcessOptions {
  /** Used in error messages; defaults to the app. */
  readonly name?: string
  /** Defaults to the app's own ready message. */
  readonly readyMessage?: string
  /** How long `ready` waits before it rejects and the process is SIGKILLed. */
  readonly timeoutMs?: number
  /** Every chunk of stdout and stderr, as it arrives (log files, echo). */
  readonly onOutput?: (chunk: Buffer) => void
  /** How much of the most recent output `output()` keeps. */
  readonly outputLimit?: number
}

export interface AppProcess {
  readonly name: string
  readonly child: ChildProcess
  readonly pid: number
  /** Resolves with the exit code (or signal) once the process has exited. */
  readonly exited: Promise<number | NodeJS.Signals>
  /**
   * Resolves once the ready message was logged; rejects (after a SIGKILL) when the process exits
   * first or the timeout passes, with the output so far.
   */
  readonly ready: Promise<void>
  /** The most recent output (stdout and stderr), at most `outputLimit` characters. */
  output(): string
  kill(signal?: NodeJS.Signals): void
  /** SIGTERM, then SIGKILL after `graceMs`; resolves when the process is gone. */
  close(graceMs?: number): Promise<void>
  /** The same as `close`. */
  stop(graceMs?: number): Promise<void>
  isClosed(): boolean
}

/**
 * Spawns `apps/<app>/src/main.ts` with `env` on top of this process's environment and answers at
 * once, so that a caller can track the process before it is ready (an interrupted start then
 * never leaks it). Await `ready` before sending work.
 */
export function spawnApp(
  app: BatonApp,
  env: Readonly<Record<string, string>>,
  options: AppProcessOptions = {},
): AppProcess {
  return spawnEntry(`apps/${app}/src/main.ts`, env, {
    ...options,
    name: options.name ?? app,
    readyMessage: options.readyMessage ?? READY_MESSAGES[app],
  })
}

/**
 * Spawns any Node entry file of the repository (`entry` relative to its root) under the same rules
 * as `spawnApp`; the bench runs the processes of the systems it compares Baton with this way.
 */
export function spawnEntry(
  entry: string,
  env: Readonly<Record<string, string>>,
  options: AppProcessOptions & { readonly name: string; readonly readyMessage: string },
): AppProcess {
  const { name, readyMessage } = options
  const outputLimit = options.outputLimit ?? 1_000_000
  const child = spawn(process.execPath, [entry], {
    cwd: REPO_ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  const pid = child.pid
  if (pid === undefined) throw new Error(`${name} has no pid`)
  let closed = false
  const exited = new Promise<number | NodeJS.Signals>((resolve) => {
    child.once('exit', (code, signal) => {
      closed = true
      resolve(signal ?? code ?? 0)
    })
  })
  let log = ''
  let seen = false
  let markReady: () => void = () => {}
  const ready = new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL')
      reject(new Error(`${name} not ready after ${options.timeoutMs ?? 30_000} ms:\n${log}`))
    }, options.timeoutMs ?? 30_000)
    markReady = () => {
      clearTimeout(timer)
      resolve()
    }
    void exited.then((code) => {
      clearTimeout(timer)
      reject(new Error(`${name} exited (${String(code)}) before it was ready:\n${log}`))
    })
  })
  // Callers that stop caring (a supervisor that gave up) must not turn a late failure into an
  // unhandled rejection; callers that await `ready` still see it.
  void ready.catch(() => undefined)
  const onChunk = (chunk: Buffer): void => {
    options.onOutput?.(chunk)
    log = (log + chunk.toString()).slice(-outputLimit)
    // Kept scanning the bounded tail: a ready line split across two chunks is still seen.
    if (!seen && log.includes(readyMessage)) {
      seen = true
      markReady()
    }
  }
  child.stdout.on('data', onChunk)
  child.stderr.on('data', onChunk)
  const close = async (graceMs = 15_000): Promise<void> => {
    if (closed) return
    child.kill('SIGTERM')
    const timer = setTimeout(() => child.kill('SIGKILL'), graceMs)
    await exited
    clearTimeout(timer)
  }
  return {
    name,
    child,
    pid,
    exited,
    ready,
    output: () => log,
    kill: (signal = 'SIGTERM') => {
      child.kill(signal)
    },
    close,
    stop: close,
    isClosed: () => closed,
  }
}

/** Spawns an app and resolves once it is ready (see `spawnApp`). */
export async function startApp(
  app: BatonApp,
  env: Readonly<Record<string, string>>,
  options: AppProcessOptions = {},
): Promise<AppProcess> {
  const started = spawnApp(app, env, options)
  await started.ready
  return started
}

/** A test's handle on an app process. */
export type ServiceProcess = Pick<
  AppProcess,
  'pid' | 'output' | 'exited' | 'kill' | 'close' | 'isClosed'
>

/**
 * Starts a Baton app for a test that kills processes: info-level logs unless `env` says otherwise,
 * resolved once ready.
 */
export function startServiceProcess(
  app: BatonApp,
  env: Record<string, string>,
  options: { readyMessage?: string; timeoutMs?: number } = {},
): Promise<ServiceProcess> {
  // A start takes a few seconds; on a machine shared with other suites, far more. A bound that
  // fails a test only for a machine's load proves nothing, so this one is generous.
  return startApp(app, { LOG_LEVEL: 'info', ...env }, { timeoutMs: 90_000, ...options })
}

/** The services of a test file: its database, its Redis and its queue prefix. */
export interface TestServices {
  readonly databaseUrl: string
  readonly redisUrl: string
  readonly queuePrefix: string
}

/**
 * The part of both apps' environment that points them at a test file's services, for processes
 * and for apps composed in the test's own process alike. `DB_PREPARED_STATEMENTS` comes along
 * when the run sets it: the `integration-pgbouncer` project does, for the PgBouncer its
 * `databaseUrl` goes through.
 */
export function servicesEnv(ctx: TestServices): Record<string, string> {
  const prepared = process.env.DB_PREPARED_STATEMENTS
  return {
    DATABASE_URL: ctx.databaseUrl,
    REDIS_URL: ctx.redisUrl,
    QUEUE_PREFIX: ctx.queuePrefix,
    ...(prepared === undefined ? {} : { DB_PREPARED_STATEMENTS: prepared }),
  }
}

/**
 * Environment for a worker process in a test: this file's database, Redis and prefix, and short
 * lease, heartbeat and reconcile intervals so faults resolve in about a second.
 */
export function workerProcessEnv(
  ctx: TestServices,
  extra: Record<string, string> = {},
): Record<string, string> {
  return {
    ...servicesEnv(ctx),
    LEASE_TTL_MS: '1500',
    HEARTBEAT_INTERVAL_MS: '300',
    RECONCILE_INTERVAL_MS: '200',
    REQUEUE_AFTER_MS: '500',
    WORKER_CONCURRENCY: '20',
    // Many workers share this host in tests: none serves /metrics unless the test asks for it.
    METRICS_PORT: '0',
    ...extra,
  }
}

/**
 * Environment for the API in a test, as a process or in process: this file's database, Redis and
 * prefix, a free port on the loopback, and a 64 KiB body limit (tests send one just above it).
 */
export function apiProcessEnv(
  ctx: TestServices,
  extra: Record<string, string> = {},
): Record<string, string> {
  return {
    ...servicesEnv(ctx),
    HOST: '127.0.0.1',
    PORT: '0',
    BODY_LIMIT_BYTES: '65536',
    ...extra,
  }
}

/** The URL an API process bound, read from its ready line (PORT=0 picks a free port). */
export function apiAddress(api: Pick<AppProcess, 'output'>): string {
  const address = /"address":"(http:\/\/[^"]+)"/.exec(api.output())?.[1]
  if (address === undefined) throw new Error(`no address in the API's output:\n${api.output()}`)
  return address
}
