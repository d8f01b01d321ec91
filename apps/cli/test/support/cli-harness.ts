// Shared by this app's integration tests: `baton` as a user runs it, a real process against a real
// API and worker (the stack fixture, on the test file's database, Redis and queue prefix), in a real
// pseudo-terminal (util-linux `script`) or piped.
import { spawn, type ChildProcessByStdio } from 'node:child_process'
import type { Readable, Writable } from 'node:stream'
import { fileURLToPath } from 'node:url'
import { expect, test, type BatonStack } from '@baton/testing'

const MAIN = fileURLToPath(new URL('../../src/main.ts', import.meta.url))

export interface Run {
  readonly code: number | null
  readonly stdout: string
  /** What `baton` wrote to stdout, byte for byte. */
  readonly stdoutBytes: Buffer
  readonly stderr: string
}

export const ADMIN_API_KEY = 'cli-test-admin-key-0123456789abcdef0123456789'

/** The API key each API started here issued, by the API's URL: `baton` gets it as BATON_API_KEY. */
export const KEYS = new Map<string, string>()

/** A started `command`: its process, what it wrote so far, and its end. */
function start(
  command: string,
  args: readonly string[],
  baseUrl: string,
  options: { readonly apiKey?: string; readonly stdin?: 'ignore' | 'pipe' } = {},
) {
  // Typed for what it pipes: stdout and stderr always, stdin only when asked for.
  const child = spawn(command, args, {
    env: {
      // eslint-disable-next-line no-restricted-properties -- `baton` runs in the test's environment
      ...process.env,
      BATON_URL: baseUrl,
      BATON_API_KEY: options.apiKey ?? KEYS.get(baseUrl) ?? '',
    },
    stdio: [options.stdin ?? 'ignore', 'pipe', 'pipe'],
  }) as ChildProcessByStdio<Writable | null, Readable, Readable>
  // Chunks are joined before decoding: a character may be split between two of them.
  const stdout: Buffer[] = []
  const stderr: Buffer[] = []
  child.stdout.on('data', (chunk: Buffer) => stdout.push(chunk))
  child.stderr.on('data', (chunk: Buffer) => stderr.push(chunk))
  const exited = new Promise<Run>((resolve) =>
    child.once('close', (code) => {
      const stdoutBytes = Buffer.concat(stdout)
      resolve({
        code,
        stdout: stdoutBytes.toString(),
        stdoutBytes,
        stderr: Buffer.concat(stderr).toString(),
      })
    }),
  )
  return { child, stdout, stderr, exited }
}

const collect = (command: string, args: readonly string[], baseUrl: string, apiKey?: string) =>
  start(command, args, baseUrl, apiKey === undefined ? {} : { apiKey }).exited

/** `baton ARGS` with stdout and stderr piped, with `apiKey` as BATON_API_KEY. */
export const batonWithKey = (apiKey: string, baseUrl: string, ...args: string[]) =>
  collect(process.execPath, [MAIN, ...args], baseUrl, apiKey)

/** `baton ARGS` with stdout and stderr piped. */
export const baton = (baseUrl: string, ...args: string[]) =>
  collect(process.execPath, [MAIN, ...args], baseUrl)

/** `baton ARGS` as a user types into it: stdin is a pipe the test writes lines to and ends. */
export interface Interactive {
  /** Types `line` and Enter. */
  type(line: string): void
  /** Closes stdin: the end of the input. */
  end(): void
  /** Resolves with what stdout holds once `until` accepts it (within `timeoutMs`, default 60 s). */
  untilStdout(until: (stdout: string) => boolean, what: string, timeoutMs?: number): Promise<string>
  /** Resolves when `baton` exited, with everything it wrote. */
  readonly exited: Promise<Run>
  /** SIGKILLs `baton` if it still runs (a failed test's leftover). */
  kill(): void
}

export function batonInteractive(baseUrl: string, ...args: string[]): Interactive {
  const { child, stdout, stderr, exited } = start(process.execPath, [MAIN, ...args], baseUrl, {
    stdin: 'pipe',
  })
  const input = child.stdin
  if (input === null) throw new Error('baton was started without a stdin pipe')
  const text = () => Buffer.concat(stdout).toString()
  const watchers = new Set<() => void>()
  const notify = () => {
    for (const watcher of watchers) watcher()
  }
  // After the collector's own listeners, so a watcher sees each chunk (and the end) in place.
  child.stdout.on('data', notify)
  child.once('close', notify)
  return {
    type: (line) => input.write(`${line}\n`),
    end: () => input.end(),
    exited,
    kill: () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
    },
    untilStdout: (until, what, timeoutMs = 60_000) =>
      new Promise((resolve, reject) => {
        const check = () => {
          const out = text()
          if (until(out)) {
            done()
            resolve(out)
          } else if (child.exitCode !== null || child.signalCode !== null) {
            done()
            reject(
              new Error(
                `baton exited before ${what}:\n${out}\n${Buffer.concat(stderr).toString()}`,
              ),
            )
          }
        }
        const timer = setTimeout(() => {
          done()
          reject(
            new Error(
              `no ${what} within ${String(timeoutMs)}ms:\n${text()}\n${Buffer.concat(stderr).toString()}`,
            ),
          )
        }, timeoutMs)
        const done = () => {
          clearTimeout(timer)
          watchers.delete(check)
        }
        watchers.add(check)
        check()
      }),
  }
}

const shellQuote = (arg: string) => `'${arg.replaceAll("'", `'\\''`)}'`

/** `baton ARGS` on a pseudo-terminal: `script` gives it a TTY and copies what it draws to stdout. */
export const batonOnTerminal = (baseUrl: string, ...args: string[]) =>
  collect(
    'script',
    ['-qfec', [process.execPath, MAIN, ...args].map(shellQuote).join(' '), '/dev/null'],
    baseUrl,
  )

/**
 * Every test gets its own API (with `ADMIN_API_KEY`) and worker as processes on this file's services,
 * stopped after it (or earlier by the test); `baton` finds the key by the API's URL.
 */
export const cliTest = test.extend<{ stack: BatonStack }>({
  stack: async ({ baton }, use) => {
    const stack = await baton({ apiEnv: { ADMIN_API_KEY } })
    KEYS.set(stack.base, stack.key)
    await use(stack)
  },
})

export const UUID = '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}'

/**
 * For tests that start `baton` a few dozen times: each start pays Node's startup, which on a busy
 * machine alone can take a second.
 */
export const SLOW_CLI = { timeout: 120_000 } as const

/** One failure path of a command: its arguments, the README's exit code, and what stderr says. */
export interface ExitRow {
  readonly args: readonly string[]
  readonly code: number
  readonly stderr: RegExp
}

/** Runs every row against the API at `baseUrl`: each exits with its code, says why, prints nothing. */
export async function expectExits(baseUrl: string, rows: readonly ExitRow[]): Promise<void> {
  for (const row of rows) {
    const run = await baton(baseUrl, ...row.args)
    const what = `baton ${row.args.join(' ')}\n${run.stderr}`
    expect({ code: run.code, stdout: run.stdout }, what).toEqual({ code: row.code, stdout: '' })
    expect(run.stderr, what).toMatch(row.stderr)
  }
}
