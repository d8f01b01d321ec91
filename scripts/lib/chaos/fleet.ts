// Process handling for `npm run chaos`: the API and a worker fleet as separate processes, each
// with its output appended to a log file (and echoed to stderr with `verbose`), plus the faults
// that act on processes: SIGKILL a worker (and start a replacement), restart the API.
import { createWriteStream, mkdirSync, type WriteStream } from 'node:fs'
import { join } from 'node:path'
import { spawnApp, type BatonApp } from '@baton/testing/processes'
import { echoLines, type RunningService } from '../services.ts'

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
   * Spawns through the shared launcher; the child is tracked from the moment it is spawned, so an
   * interrupted start never leaks a process, and its whole output, startup included, goes to its
   * log file.
   */
  async #spawn(name: string, app: BatonApp): Promise<Tracked> {
    const log = createWriteStream(join(this.#options.logDir, `${name}.log`), { flags: 'a' })
    const echo = this.#options.verbose
      ? echoLines(name, (line) => process.stderr.write(line))
      : undefined
    const service = spawnApp(app, this.#options.env, {
      name,
      timeoutMs: this.#options.startTimeoutMs ?? 60_000,
      outputLimit: 8_000,
      onOutput: (chunk) => {
        log.write(chunk)
        echo?.(chunk)
      },
    })
    this.#all.add(service)
    log.write(`--- ${new Date().toISOString()} ${name} spawned (pid ${service.pid})\n`)
    const tracked: Tracked = { service, log, expected: false }
    let ready = false
    void service.exited.then((code) => {
      log.end(`--- ${new Date().toISOString()} ${name} exited (${String(code)})\n`)
      this.#all.delete(service)
      if (ready && !tracked.expected && !this.#stopping)
        this.#onCrash(tracked, app, code, service.output())
    })
    try {
      await service.ready
    } catch (error) {
      tracked.expected = true
      throw error
    }
    ready = true
    log.write(`--- ${new Date().toISOString()} ${name} ready\n`)
    return tracked
  }

  #onCrash(tracked: Tracked, app: BatonApp, code: number | string, tail: string): void {
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

  /**
   * A deploy: each worker in turn gets SIGTERM (its checked shutdown drains it; SIGKILL after the
   * grace), exits, and a new one takes its place before the next is stopped.
   */
  async rollingRestart(graceMs = 30_000): Promise<string[]> {
    await this.settled()
    const replaced: string[] = []
    for (const old of [...this.#workers]) {
      const index = this.#workers.indexOf(old)
      if (index < 0) continue
      this.#workers.splice(index, 1)
      old.expected = true
      await old.service.stop(graceMs)
      const code = await old.service.exited
      const started = await this.startWorker()
      replaced.push(`${old.service.name} (exit ${String(code)}) → ${started}`)
    }
    return replaced
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
