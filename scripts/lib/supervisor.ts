// Keeps `npm run up`'s API and workers running: a process that exits while up is not stopping is
// started again after a backoff (restart-backoff.ts), with a fresh start() each time (a worker gets
// a fresh WORKER_ID). Only stop() — Ctrl-C or SIGTERM to up — ends them for good.
import { createRestartBackoff, type RestartBackoff } from './restart-backoff.ts'
import type { RunningService } from './services.ts'
import { errorText } from './dev-service.ts'

/** A terminal Ctrl-C reaches the children too: give up's own SIGINT handler time to run first. */
const SIGNAL_RACE_MS = 250

export interface SupervisedProcess {
  readonly name: string
  /** Starts one incarnation and resolves once it is ready (it logs its own "started" line). */
  readonly start: () => Promise<RunningService>
}

export interface Supervisor {
  /** Starts `process` the first time; rejects (and supervises nothing) if it does not become ready. */
  add(process: SupervisedProcess): Promise<void>
  /** Cancels pending restarts and stops every process (SIGTERM, SIGKILL after `graceMs`). */
  stop(graceMs: number): Promise<void>
  /** The names of the processes running now. */
  running(): string[]
}

/** `isStopping` answers whether up is stopping anyway (a signal during startup, before stop()). */
export function createSupervisor(
  say: (line: string) => void,
  isStopping: () => boolean,
): Supervisor {
  const entries: Entry[] = []
  let stopping = false
  const halted = (): boolean => stopping || isStopping()

  interface Entry {
    readonly spec: SupervisedProcess
    current: RunningService | undefined
    /** A restart in progress, so that stop() can wait for it and stop what it started. */
    starting: Promise<void> | undefined
    timer: NodeJS.Timeout | undefined
    /** Kept across incarnations: a crash loop backs off, a minute of health resets it. */
    readonly backoff: RestartBackoff
  }

  function watch(entry: Entry, service: RunningService): void {
    const startedAt = Date.now()
    void service.exited.then((code) => {
      setTimeout(() => {
        if (halted()) return
        entry.current = undefined
        const delayMs = entry.backoff.afterExit(Date.now() - startedAt)
        say(
          `up: ${entry.spec.name} exited unexpectedly (${String(code)}); restarting in ${delayMs / 1000} s`,
        )
        schedule(entry, delayMs)
      }, SIGNAL_RACE_MS)
    })
  }

  function schedule(entry: Entry, delayMs: number): void {
    entry.timer = setTimeout(() => {
      entry.timer = undefined
      if (halted()) return
      entry.starting = entry.spec.start().then(
        (service) => {
          entry.starting = undefined
          entry.current = service
          watch(entry, service)
        },
        (error: unknown) => {
          entry.starting = undefined
          if (halted()) return
          const nextMs = entry.backoff.afterFailedStart()
          say(
            `up: ${entry.spec.name} did not start (${errorText(error).split('\n')[0] ?? ''}); retrying in ${nextMs / 1000} s`,
          )
          schedule(entry, nextMs)
        },
      )
    }, delayMs)
  }

  return {
    async add(spec) {
      const service = await spec.start()
      const entry: Entry = {
        spec,
        current: service,
        starting: undefined,
        timer: undefined,
        backoff: createRestartBackoff(),
      }
      entries.push(entry)
      watch(entry, service)
    },
    async stop(graceMs) {
      stopping = true
      for (const entry of entries) clearTimeout(entry.timer)
      await Promise.all(entries.map(async (entry) => entry.starting?.catch(() => undefined)))
      await Promise.all(entries.map(async (entry) => entry.current?.stop(graceMs)))
    },
    running: () =>
      entries
        .filter(
          (e) =>
            e.current !== undefined &&
            e.current.child.exitCode === null &&
            e.current.child.signalCode === null,
        )
        .map((e) => e.spec.name),
  }
}
