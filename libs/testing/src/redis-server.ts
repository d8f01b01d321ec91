import { spawn, type ChildProcess } from 'node:child_process'
import { accessSync, constants } from 'node:fs'
import { createConnection, createServer } from 'node:net'
import { delimiter, join } from 'node:path'

/** A private `redis-server` of one test, without persistence: a restart loses every key. */
export interface RedisServer {
  readonly url: string
  readonly port: number
  /** The process id of the running server (for its CPU time in `/proc/<pid>/stat`). */
  pid(): number | undefined
  /** SIGKILL without a restart: the server is gone until `restart`. */
  crash(): Promise<void>
  /**
   * A real restart: SIGKILL (every connection drops, every key is gone), wait for the exit, start
   * again on the same port, and resolve once it answers PING.
   */
  restart(): Promise<void>
  /** SIGSTOP: the server keeps its connections open and answers nothing until `resume`. */
  pause(): void
  /** SIGCONT: a paused server answers again, what it was sent meanwhile first. */
  resume(): void
  close(): Promise<void>
  isClosed(): boolean
}

const BINARY = 'redis-server'

/** True when `redis-server` is an executable on PATH (tests needing a private Redis skip otherwise). */
export function hasRedisServerBinary(): boolean {
  const dirs = (process.env.PATH ?? '').split(delimiter).filter((d) => d !== '')
  return dirs.some((dir) => {
    try {
      accessSync(join(dir, BINARY), constants.X_OK)
      return true
    } catch {
      return false
    }
  })
}

/**
 * Starts a private `redis-server` on 127.0.0.1 and a free port, with RDB snapshots and the AOF
 * off, and resolves once it answers PING. Register it with `track()` so it is closed after the test.
 */
export async function startRedisServer(
  options: {
    readonly startTimeoutMs?: number
    /**
     * More `redis-server` arguments, given the port (a cluster node names its config file by
     * it); see `startRedisCluster`.
     */
    readonly args?: (port: number) => readonly string[]
  } = {},
): Promise<RedisServer> {
  const startTimeoutMs = options.startTimeoutMs ?? 10_000
  const launch = (port: number, timeoutMs: number) =>
    launchServer(port, timeoutMs, options.args?.(port) ?? [])
  // The free port is only free until someone else takes it: try a few before giving up.
  let running: RunningServer | undefined
  let port = 0
  for (let round = 1; running === undefined; round += 1) {
    port = await freePort()
    try {
      running = await launch(port, startTimeoutMs)
    } catch (error) {
      if (round >= 3) throw error
    }
  }
  let current: RunningServer = running
  let closed = false
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    pid: () => current.pid,
    crash: () => current.kill('SIGKILL'),
    async restart() {
      if (closed) throw new Error('redis-server is closed')
      await current.kill('SIGKILL')
      current = await launch(port, startTimeoutMs)
    },
    pause: () => current.signal('SIGSTOP'),
    resume: () => current.signal('SIGCONT'),
    async close() {
      if (closed) return
      closed = true
      // A paused server would not act on SIGTERM until resumed.
      current.signal('SIGCONT')
      await current.kill('SIGTERM')
    },
    isClosed: () => closed,
  }
}

interface RunningServer {
  readonly pid: number | undefined
  /** Sends `signal` (SIGKILL after 5 s if still alive) and resolves once the process has exited. */
  kill(signal: NodeJS.Signals): Promise<void>
  /** Sends `signal` to a server that has not exited. */
  signal(signal: NodeJS.Signals): void
}

async function launchServer(
  port: number,
  startTimeoutMs: number,
  args: readonly string[],
): Promise<RunningServer> {
  const child: ChildProcess = spawn(
    BINARY,
    [
      '--port',
      String(port),
      '--bind',
      '127.0.0.1',
      '--save',
      '',
      '--appendonly',
      'no',
      '--daemonize',
      'no',
      '--loglevel',
      'warning',
      ...args,
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  )
  let log = ''
  const collect = (chunk: Buffer): void => {
    log += chunk.toString()
  }
  child.stdout?.on('data', collect)
  child.stderr?.on('data', collect)
  let hasExited = false
  const exited = new Promise<void>((resolve) => {
    child.once('exit', () => {
      hasExited = true
      resolve()
    })
    child.once('error', (error) => {
      log += String(error)
      hasExited = true
      resolve()
    })
  })
  const deadline = Date.now() + startTimeoutMs
  while (!(await answersPing(port))) {
    if (hasExited || Date.now() > deadline) {
      child.kill('SIGKILL')
      await exited
      throw new Error(`redis-server did not start on port ${port}:\n${log}`)
    }
    await new Promise((r) => setTimeout(r, 20))
  }
  return {
    pid: child.pid,
    signal(signal) {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal)
    },
    async kill(signal) {
      if (child.exitCode !== null || child.signalCode !== null) return
      child.kill(signal)
      const timer = setTimeout(() => child.kill('SIGKILL'), 5_000)
      await exited
      clearTimeout(timer)
    },
  }
}

/** One inline PING on a fresh socket: true on `+PONG`, false on refusal, error or silence. */
function answersPing(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ host: '127.0.0.1', port })
    let reply = ''
    const finish = (ok: boolean): void => {
      socket.destroy()
      resolve(ok)
    }
    socket.setTimeout(500, () => finish(false))
    socket.once('error', () => finish(false))
    socket.once('connect', () => socket.write('PING\r\n'))
    socket.on('data', (chunk: Buffer) => {
      reply += chunk.toString()
      if (reply.includes('\r\n')) finish(reply.startsWith('+PONG'))
    })
  })
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const address = server.address()
      const port = typeof address === 'object' && address !== null ? address.port : 0
      server.close(() => (port > 0 ? resolve(port) : reject(new Error('no free port'))))
    })
  })
}
