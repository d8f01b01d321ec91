// A Redis or Postgres server that `npm run up` started itself (see dev-redis.ts, dev-postgres.ts).
import { spawn } from 'node:child_process'
import { createWriteStream } from 'node:fs'

export interface OwnServer {
  readonly pid: number
  /** Resolves with the exit code or signal once the process has exited. */
  readonly exited: Promise<number | string>
  hasExited(): boolean
  /** The last lines of its output, for error messages. */
  tail(): string
  /** Asks it to stop with its own fast-shutdown signal; SIGKILL after `graceMs`. */
  stop(graceMs?: number): Promise<void>
  /** Synchronous stop request, for process exit paths that cannot wait. */
  stopNow(): void
}

/**
 * Starts `command` in its own process group, so that a Ctrl-C in the terminal reaches only up and
 * not the servers: the workers' checked shutdown still needs Redis and Postgres, and up stops them
 * after the workers. Output goes to `logFile`.
 */
export function spawnOwnServer(
  command: string,
  args: readonly string[],
  options: {
    readonly logFile: string
    readonly stopSignal: NodeJS.Signals
    readonly uid?: number
    readonly gid?: number
  },
): OwnServer {
  const child = spawn(command, args, {
    cwd: '/',
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
    ...(options.uid === undefined ? {} : { uid: options.uid }),
    ...(options.gid === undefined ? {} : { gid: options.gid }),
  })
  const log = createWriteStream(options.logFile, { flags: 'a' })
  let tail = ''
  const collect = (chunk: Buffer): void => {
    log.write(chunk)
    tail = (tail + chunk.toString()).slice(-4_000)
  }
  child.stdout.on('data', collect)
  child.stderr.on('data', collect)
  let exitedFlag = false
  const exited = new Promise<number | string>((resolve) => {
    child.once('error', (error) => {
      tail += `\n${error.message}`
      exitedFlag = true
      resolve(error.message)
    })
    child.once('exit', (code, signal) => {
      exitedFlag = true
      resolve(signal ?? code ?? 0)
    })
  })
  void exited.then(() => log.end())
  const stopNow = (): void => {
    if (!exitedFlag) child.kill(options.stopSignal)
  }
  return {
    pid: child.pid ?? 0,
    exited,
    hasExited: () => exitedFlag,
    tail: () => tail,
    stopNow,
    async stop(graceMs = 15_000) {
      if (exitedFlag) return
      stopNow()
      const timer = setTimeout(() => child.kill('SIGKILL'), graceMs)
      await exited
      clearTimeout(timer)
    },
  }
}

/** Polls `answers` until it is true, failing early when `server` exits and after `timeoutMs`. */
export async function waitUntilAnswering(
  what: string,
  server: OwnServer,
  answers: () => Promise<boolean>,
  timeoutMs = 30_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!(await answers())) {
    if (server.hasExited()) {
      throw new Error(`${what} exited (${String(await server.exited)}):\n${server.tail()}`)
    }
    if (Date.now() > deadline) {
      await server.stop()
      throw new Error(`${what} did not answer within ${timeoutMs / 1000} s:\n${server.tail()}`)
    }
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
}
