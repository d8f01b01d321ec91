// The system a reader of the docs talks to: `npm run up`, started as a reader starts it, with the
// URL and the keys it prints. Stopped as Ctrl-C stops it (SIGINT to its process group).
import { spawn } from 'node:child_process'
import { REPO_ROOT } from '@baton/testing/processes'

export interface LiveSystem {
  /** The API's base URL, as up printed it. */
  readonly url: string
  /** The key of namespace `dev` up issued. */
  readonly apiKey: string
  readonly adminKey: string
  /** Where up keeps its keys (and any server of its own): BATON_DEV_DIR. */
  readonly devDir: string
  /** Everything up printed so far (its own lines and its processes'). */
  output(): string
  /** Ctrl-C: up stops the API, the workers and any server it started, then exits. */
  stop(): Promise<void>
}

const STOP_GRACE_MS = 40_000 // above up's own grace for its processes (20 s)

/**
 * Runs `npm run up` in the repository with `env` over this process's environment (BATON_DEV_DIR
 * must be among them) and resolves once it has printed its banner, URL and keys.
 */
export async function startLiveSystem(
  env: Record<string, string> & { readonly BATON_DEV_DIR: string },
  timeoutMs: number,
): Promise<LiveSystem> {
  const child = spawn('npm', ['run', 'up'], {
    cwd: REPO_ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true, // its own process group, which Ctrl-C would reach as a whole
  })
  let log = ''
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  let running = true
  void exited.then(() => (running = false))
  const banner = new Promise<string>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`npm run up printed no banner in ${timeoutMs} ms:\n${log}`)),
      timeoutMs,
    )
    const read = (chunk: Buffer): void => {
      log += chunk.toString()
      // The banner's last line: URL and keys are printed above it.
      if (/^A process that exits unexpectedly is restarted/m.test(log)) {
        clearTimeout(timer)
        resolve(log)
      }
    }
    child.stdout.on('data', read)
    child.stderr.on('data', read)
    void exited.then(() => {
      clearTimeout(timer)
      reject(new Error(`npm run up exited before it was up:\n${log}`))
    })
  })
  const stop = async (): Promise<void> => {
    if (!running || child.pid === undefined) return
    process.kill(-child.pid, 'SIGINT')
    const timer = setTimeout(() => process.kill(-(child.pid ?? 0), 'SIGKILL'), STOP_GRACE_MS)
    await exited
    clearTimeout(timer)
  }
  let printed: string
  try {
    printed = await banner
  } catch (error) {
    await stop()
    throw error
  }
  const line = (pattern: RegExp, what: string): string => {
    const found = pattern.exec(printed)?.[1]
    if (found === undefined) throw new Error(`npm run up printed no ${what}:\n${printed}`)
    return found
  }
  return {
    url: line(/^ {2}API +(http\S+)$/m, 'API URL'),
    apiKey: line(/^API key \(namespace dev\): +(bk_\S+)$/m, 'API key'),
    adminKey: line(/^Admin key: +(\S+)$/m, 'admin key'),
    devDir: env.BATON_DEV_DIR,
    output: () => log,
    stop,
  }
}
