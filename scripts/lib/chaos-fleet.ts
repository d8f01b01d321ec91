// Process handling for `npm run chaos`: the API and a worker fleet as separate processes, each
// with its output appended to a log file (and echoed to stderr with `verbose`), plus the faults
// that act on processes: SIGKILL a worker (and start a replacement), restart the API.
import { createWriteStream, mkdirSync, type WriteStream } from 'node:fs'
import { join } from 'node:path'
import { spawn } from 'node:child_process'
import { REPO_ROOT, type RunningService } from './services.ts'

export interface FleetOptions {
  readonly env: Record<string, string>
  readonly logDir: string
  readonly verbose: boolean
  readonly workers: number
  readonly startTimeoutMs?: number
  readonly onCrash?: (crash: Crash) => void
  readonly onNote?: (note: string) => void
}

interface Tracked {
  readonly service: RunningService
  readonly log: WriteStream
  /** Set before this script stops or kills the process; any other exit is a crash. */
  expected: boolean
}

/** A process that exited without being asked to (the fleet restarts it, as a supervisor would). */
export interface Crash {
  readonly name: string
  readonly code: number | string
  readonly at: string
  /** The first error-looking line of the process's last output, with a pg/errno code if any. */
  readonly reason: string
}

function crashReason(tail: string): string {
  const lines = tail.split('\n')
  const error =
    lines.find((l) => /^(\w*Error|error)\b/.test(l.trim())) ??
    lines.reverse().find((l) => l.trim() !== '' && !/^( {4}at |{)/.test(l)) ??
    'no output'
  const code = /\bcode: '([^']+)'/.exec(tail)?.[1]
  return `${error.trim().slice(0, 200)}${code === undefined ? '' : ` (code ${code})`}`
}

export class Fleet {
  readonly #options: FleetOptions
  readonly #workers: Tracked[] = []
  #api: Tracked | undefined
  #nextWorker = 1
  #apiGeneration = 0
  /** Every process ever started, for the last-resort kill on exit. */
  readonly #all = new Set<RunningService>()
  readonly #restarts = new Set<Promise<void>>()
  #stopping = false
  readonly crashes: Crash[] = []

  constructor(options: FleetOptions) {
    this.#options = options
    mkdirSync(options.logDir, { recursive: true })
  }

  get workerCount(): number {
    return this.#workers.length
  }

  async start(): Promise<void> {
    await this.startApi()
    await Promise.all(Array.from({ length: this.#options.workers }, () => this.startWorker()))
  }

  /**
   * Like `startService` (same entry file, same readiness line), but the child is tracked from the
   * moment it is spawned, so an interrupted start never leaks a process, and its whole output,
   * startup included, goes to its log file.
   */
  async #spawn(name: string, app: 'api' | 'worker'): Promise<Tracked> {
    const readyLine = app === 'api' ? 'api listening' : 'worker started'
    const child = spawn(process.execPath, [`apps/${app}/src/main.ts`], {
      cwd: REPO_ROOT,
      env: { ...process.env, ...this.#options.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    const exited = new Promise<number | string>((resolve) => {
      child.once('exit', (code, signal) => resolve(signal ?? code ?? 0))
    })
    const service: RunningService = {
      name,
      child,
      exited,
      async stop(graceMs = 15_000) {
        if (child.exitCode !== null || child.signalCode !== null) return
        child.kill('SIGTERM')
        const timer = setTimeout(() => child.kill('SIGKILL'), graceMs)
        await exited
        clearTimeout(timer)
      },
    }
    this.#all.add(service)
    const log = createWriteStream(join(this.#options.logDir, `${name}.log`), { flags: 'a' })
    log.write(`--- ${new Date().toISOString()} ${name} spawned (pid ${child.pid ?? '?'})\n`)
    const tracked: Tracked = { service, log, expected: false }
    let ready = false
    let markReady: () => void = () => {}
    const readyPromise = new Promise<void>((resolve) => (markReady = resolve))
    let partial = ''
    let tail = ''
    const onChunk = (chunk: Buffer): void => {
      log.write(chunk)
      const text = chunk.toString()
      tail = (tail + text).slice(-8_000)
      if (!ready && tail.includes(readyLine)) {
        ready = true
        markReady()
      }
      if (!this.#options.verbose) return
      const lines = (partial + text).split('\n')
      partial = lines.pop() ?? ''
      for (const line of lines) if (line.trim() !== '') process.stderr.write(`[${name}] ${line}\n`)
    }
    child.stdout.on('data', onChunk)
    child.stderr.on('data', onChunk)
    void exited.then((code) => {
      log.end(`--- ${new Date().toISOString()} ${name} exited (${String(code)})\n`)
      this.#all.delete(service)
      if (ready && !tracked.expected && !this.#stopping) this.#onCrash(tracked, app, code, tail)
    })
    const timeoutMs = this.#options.startTimeoutMs ?? 60_000
    let timer: NodeJS.Timeout | undefined
    const outcome = await Promise.race([
      readyPromise.then(() => 'ready' as const),
      exited.then((code) => `exited (${String(code)})`),
      new Promise<string>((resolve) => {
        timer = setTimeout(() => resolve(`not ready after ${timeoutMs} ms`), timeoutMs)
      }),
    ])
    clearTimeout(timer)
    if (outcome !== 'ready') {
      tracked.expected = true
      child.kill('SIGKILL')
      throw new Error(`${name} ${outcome} before it was ready:\n${tail.slice(-3_000)}`)
    }
    log.write(`--- ${new Date().toISOString()} ${name} ready\n`)
    return tracked
  }

  #onCrash(tracked: Tracked, app: 'api' | 'worker', code: number | string, tail: string): void {
    const name = tracked.service.name
    this.crashes.push({ name, code, at: new Date().toISOString(), reason: crashReason(tail) })
    this.#options.onCrash?.(this.crashes.at(-1)!)
    if (app === 'api') {
      if (this.#api === tracked) this.#api = undefined
    } else {
      const index = this.#workers.indexOf(tracked)
      if (index >= 0) this.#workers.splice(index, 1)
    }
    const restart = (async () => {
      const started = performance.now()
      for (let attempt = 1; !this.#stopping; attempt += 1) {
        try {
          const replacement = app === 'api' ? await this.startApi() : await this.startWorker()
          this.#options.onNote?.(
            `${replacement} replaces crashed ${name}, ready after ${Math.round(performance.now() - started)} ms`,
          )
          return
        } catch (error) {
          this.#options.onNote?.(
            `restart of ${name} failed (attempt ${attempt}): ${String(error).slice(0, 500)}`,
          )
          if (attempt >= 5) throw error
          await new Promise((resolve) => setTimeout(resolve, 500))
        }
      }
    })()
    const settled = restart.catch(() => undefined)
    this.#restarts.add(settled)
    void settled.finally(() => this.#restarts.delete(settled))
  }

  /** Waits for the supervisor's restarts of crashed processes. */
  async settled(): Promise<void> {
    while (this.#restarts.size > 0) await Promise.all(this.#restarts)
  }

  async startApi(): Promise<string> {
    this.#apiGeneration += 1
    const name = `api-${this.#apiGeneration}`
    this.#api = await this.#spawn(name, 'api')
    return name
  }

  async startWorker(): Promise<string> {
    const name = `worker-${this.#nextWorker++}`
    const tracked = await this.#spawn(name, 'worker')
    this.#workers.push(tracked)
    return name
  }

  /** SIGKILLs a random worker, waits for it to die, and starts a replacement. */
  async killWorker(): Promise<{ killed: string; started: string }> {
    await this.settled()
    const index = Math.floor(Math.random() * this.#workers.length)
    const [victim] = this.#workers.splice(index, 1)
    if (victim === undefined) throw new Error('no worker to kill')
    victim.expected = true
    victim.service.child.kill('SIGKILL')
    await victim.service.exited
    const started = await this.startWorker()
    return { killed: victim.service.name, started }
  }

  /** SIGTERM the API, wait for it to exit (SIGKILL after the grace), start it again. */
  async restartApi(graceMs = 15_000): Promise<void> {
    await this.settled()
    const api = this.#api
    this.#api = undefined
    if (api !== undefined) {
      api.expected = true
      await api.service.stop(graceMs)
    }
    await this.startApi()
  }

  /** SIGTERM everything (API first, so no new work arrives), SIGKILL after the grace. */
  async stopAll(graceMs = 20_000): Promise<void> {
    this.#stopping = true
    await this.settled()
    const api = this.#api
    this.#api = undefined
    if (api !== undefined) await api.service.stop(graceMs).catch(() => undefined)
    const workers = this.#workers.splice(0)
    await Promise.all(workers.map((w) => w.service.stop(graceMs).catch(() => undefined)))
    this.killRemaining()
  }

  /** Synchronous last resort (process exit, fatal error): SIGKILL whatever is still running. */
  killRemaining(): void {
    for (const s of this.#all) {
      if (s.child.exitCode === null && s.child.signalCode === null) s.child.kill('SIGKILL')
    }
  }
}
