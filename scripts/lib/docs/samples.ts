// What every runnable sample gets: the reader's address of the API replaced by the live one, the
// keys in the environment a reader exports, and a bounded process of its own.
import { spawn } from 'node:child_process'
import type { LiveSystem } from './live-system.ts'

/** The API's address as a reader types it (`npm run up` on its default port). */
export const READER_URL = 'http://127.0.0.1:3000'

/** `text` aimed at the live system: the reader's address becomes the URL up printed. */
export function forTheLiveSystem(text: string, system: LiveSystem): string {
  return text.replaceAll(READER_URL, system.url)
}

/**
 * A sample's environment: this process's, without what only the test runner means (its Node
 * options, its services), plus what a reader of the docs exports after `npm run up`.
 */
export function sampleEnv(system: LiveSystem): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {}
  for (const [name, value] of Object.entries(process.env)) {
    if (/^(VITEST|NODE_OPTIONS$|DATABASE_URL$|REDIS_URL$|QUEUE_PREFIX$)/.test(name)) continue
    env[name] = value
  }
  return {
    ...env,
    BATON_URL: system.url,
    BATON_API_KEY: system.apiKey,
    BATON_ADMIN_KEY: system.adminKey,
    BATON_DEV_DIR: system.devDir,
    NO_COLOR: '1',
  }
}

export interface Finished {
  readonly code: number | NodeJS.Signals
  /** stdout and stderr, interleaved as they came. */
  readonly output: string
}

/**
 * Runs a command in a process group of its own and answers its exit and output; past
 * `timeoutMs` the whole group is killed and the answer says so.
 */
export function runBounded(
  command: string,
  args: readonly string[],
  options: { readonly cwd: string; readonly env: NodeJS.ProcessEnv; readonly timeoutMs: number },
): Promise<Finished> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      cwd: options.cwd,
      env: options.env,
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    })
    let output = ''
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()))
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()))
    let timedOut = false
    const timer = setTimeout(() => {
      timedOut = true
      if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL')
    }, options.timeoutMs)
    child.once('error', (error) => {
      clearTimeout(timer)
      reject(error)
    })
    child.once('close', (code, signal) => {
      clearTimeout(timer)
      const ended = timedOut ? `\n(killed after ${options.timeoutMs} ms)` : ''
      resolve({ code: signal ?? code ?? 0, output: output + ended })
    })
  })
}
