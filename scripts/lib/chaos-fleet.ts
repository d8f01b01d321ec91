// Process handling for `npm run chaos`: the API and a worker fleet as separate processes, each
// with its output appended to a log file (and echoed to stderr with `verbose`), plus the faults
// that act on processes: SIGKILL a worker (and start a replacement), restart the API.
import { createWriteStream, mkdirSync, type WriteStream } from 'node:fs'
import { join } from 'node:path'
import { startService, type RunningService } from './services.ts'

export interface FleetOptions {
  readonly env: Record<string, string>
  readonly logDir: string
  readonly verbose: boolean
  readonly workers: number
  readonly startTimeoutMs?: number
}

interface Tracked {
  readonly service: RunningService
  readonly log: WriteStream
}

export class Fleet {
  readonly #options: FleetOptions
  readonly #workers: Tracked[] = []
  #api: Tracked | undefined
  #nextWorker = 1
  #apiGeneration = 0
  /** Every process ever started, for the last-resort kill on exit. */
  readonly #all = new Set<RunningService>()

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

  async #spawn(name: string, app: 'api' | 'worker'): Promise<Tracked> {
    const service = await startService(name, app, this.#options.env, {
      timeoutMs: this.#options.startTimeoutMs ?? 60_000,
    })
    this.#all.add(service)
    const log = createWriteStream(join(this.#options.logDir, `${name}.log`), { flags: 'a' })
    log.write(`--- ${new Date().toISOString()} ${name} ready (pid ${service.child.pid ?? '?'})\n`)
    let partial = ''
    const onChunk = (chunk: Buffer): void => {
      log.write(chunk)
      if (!this.#options.verbose) return
      const lines = (partial + chunk.toString()).split('\n')
      partial = lines.pop() ?? ''
      for (const line of lines) if (line.trim() !== '') process.stderr.write(`[${name}] ${line}\n`)
    }
    service.child.stdout?.on('data', onChunk)
    service.child.stderr?.on('data', onChunk)
    void service.exited.then((code) => {
      log.end(`--- ${new Date().toISOString()} ${name} exited (${String(code)})\n`)
      this.#all.delete(service)
    })
    return { service, log }
  }

  async startApi(): Promise<void> {
    this.#apiGeneration += 1
    this.#api = await this.#spawn(`api-${this.#apiGeneration}`, 'api')
  }

  async startWorker(): Promise<string> {
    const name = `worker-${this.#nextWorker++}`
    const tracked = await this.#spawn(name, 'worker')
    this.#workers.push(tracked)
    return name
  }

  /** SIGKILLs a random worker, waits for it to die, and starts a replacement. */
  async killWorker(): Promise<{ killed: string; started: string }> {
    const index = Math.floor(Math.random() * this.#workers.length)
    const [victim] = this.#workers.splice(index, 1)
    if (victim === undefined) throw new Error('no worker to kill')
    victim.service.child.kill('SIGKILL')
    await victim.service.exited
    const started = await this.startWorker()
    return { killed: victim.service.name, started }
  }

  /** SIGTERM the API, wait for it to exit (SIGKILL after the grace), start it again. */
  async restartApi(graceMs = 15_000): Promise<void> {
    const api = this.#api
    this.#api = undefined
    if (api !== undefined) await api.service.stop(graceMs)
    await this.startApi()
  }

  /** SIGTERM everything (API first, so no new work arrives), SIGKILL after the grace. */
  async stopAll(graceMs = 20_000): Promise<void> {
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
