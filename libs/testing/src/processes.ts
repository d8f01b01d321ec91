import { spawn, type ChildProcess } from 'node:child_process'
import { fileURLToPath } from 'node:url'

const REPO_ROOT = fileURLToPath(new URL('../../../', import.meta.url))

export interface ServiceProcess {
  readonly pid: number
  readonly output: () => string
  /** Resolves with the exit code (or signal) once the process has exited. */
  readonly exited: Promise<number | NodeJS.Signals>
  kill(signal?: NodeJS.Signals): void
  /** SIGTERM, then SIGKILL after `graceMs`; resolves when the process is gone. */
  close(graceMs?: number): Promise<void>
  isClosed(): boolean
}

/**
 * Starts a Baton app (`apps/<name>/src/main.ts`) as a real child process with the given
 * environment and resolves once its log says `readyMessage`. Used by tests that kill processes.
 */
export async function startServiceProcess(
  app: 'api' | 'worker',
  env: Record<string, string>,
  options: { readyMessage?: string; timeoutMs?: number } = {},
): Promise<ServiceProcess> {
  const readyMessage =
    options.readyMessage ?? (app === 'worker' ? 'worker started' : 'api listening')
  const child: ChildProcess = spawn(process.execPath, [`apps/${app}/src/main.ts`], {
    cwd: REPO_ROOT,
    env: { ...process.env, LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let log = ''
  let closed = false
  const exited = new Promise<number | NodeJS.Signals>((resolve) => {
    child.once('exit', (code, signal) => {
      closed = true
      resolve(signal ?? code ?? 0)
    })
  })
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`${app} did not start in time:\n${log}`)),
      options.timeoutMs ?? 20_000,
    )
    const onData = (chunk: Buffer): void => {
      log += chunk.toString()
      if (log.includes(readyMessage)) {
        clearTimeout(timer)
        resolve()
      }
    }
    child.stdout?.on('data', onData)
    child.stderr?.on('data', (chunk: Buffer) => (log += chunk.toString()))
    void exited.then((code) => {
      clearTimeout(timer)
      reject(new Error(`${app} exited (${String(code)}) before it was ready:\n${log}`))
    })
  })
  const pid = child.pid
  if (pid === undefined) throw new Error(`${app} has no pid`)
  return {
    pid,
    output: () => log,
    exited,
    kill: (signal = 'SIGTERM') => {
      child.kill(signal)
    },
    async close(graceMs = 10_000) {
      if (closed) return
      child.kill('SIGTERM')
      const timer = setTimeout(() => child.kill('SIGKILL'), graceMs)
      await exited
      clearTimeout(timer)
    },
    isClosed: () => closed,
  }
}

/**
 * Environment for a worker process in a test: this file's database, Redis and prefix, and short
 * lease, heartbeat and reconcile intervals so faults resolve in about a second.
 */
export function workerProcessEnv(
  ctx: { readonly databaseUrl: string; readonly redisUrl: string; readonly queuePrefix: string },
  extra: Record<string, string> = {},
): Record<string, string> {
  return {
    DATABASE_URL: ctx.databaseUrl,
    REDIS_URL: ctx.redisUrl,
    QUEUE_PREFIX: ctx.queuePrefix,
    LEASE_TTL_MS: '1500',
    HEARTBEAT_INTERVAL_MS: '300',
    RECONCILE_INTERVAL_MS: '200',
    REQUEUE_AFTER_MS: '500',
    WORKER_CONCURRENCY: '20',
    ...extra,
  }
}
