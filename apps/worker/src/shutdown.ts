import type { Logger } from '@baton/observability'

/** A checked shutdown ran out of time with work still owned; call it again to finish. */
/**
 * How far past its deadline a checked shutdown may end: the steps after the drain are abandoned at
 * the deadline, and only the event loop's own delay remains.
 */
export const SHUTDOWN_OVERRUN_MARGIN_MS = 1_000

/** Resolves `false` once `signal` fires. */
function aborted(signal: AbortSignal): Promise<false> {
  return new Promise((resolve) => {
    if (signal.aborted) resolve(false)
    else signal.addEventListener('abort', () => resolve(false), { once: true })
  })
}

export class ShutdownDeadlineError extends Error {
  readonly owned: number
  constructor(deadlineMs: number, owned: number) {
    super(`shutdown deadline of ${deadlineMs} ms passed with ${owned} execution(s) still owned`)
    this.name = 'ShutdownDeadlineError'
    this.owned = owned
  }
}

export interface ShutdownParts {
  /** Stop taking jobs; resolves once every active job (and its terminal commit) has finished. */
  stopAdmission(): Promise<void>
  /** Cancel owned children cooperatively and make executions that start from now on aborted. */
  abortOwned(): void
  owned(): number
  /** The attempts still owned (named when a deadline leaves them to the reconciler). */
  ownedAttempts?(): readonly string[]
  /** One reconciler pass over what is left. */
  reconcileOnce(): Promise<unknown>
  /**
   * Close queues, listeners, timers and connections, none waited for past `deadline`; resolves
   * with the parts left still closing then.
   */
  closeAll(deadline: AbortSignal): Promise<readonly string[] | void>
  readonly logger: Logger
}

/** A checked shutdown call was cancelled by its caller before the drain finished. */
export class ShutdownCancelledError extends Error {
  constructor() {
    super('checked shutdown was cancelled before the drain finished; ownership kept, call again')
    this.name = 'ShutdownCancelledError'
  }
}

export type CheckedShutdown = (deadlineMs: number, signal?: AbortSignal) => Promise<void>

/**
 * `shutdownChecked(deadlineMs)`: stop admission, cancel children, and wait for every owned
 * execution to finish and commit, all under one deadline; then reconcile and close within what is
 * left of it. If the deadline passes before the drain, it rejects with `ShutdownDeadlineError` and
 * keeps everything running — heartbeats keep the leases, commit paths stay open — so a later call
 * can complete the drain (a child that commits meanwhile is recorded normally, a retried commit is
 * an exact replay). If it passes after the drain, the final reconcile and whatever is still
 * closing are left (to the reconcilers of other workers, to the process's exit), and said so:
 * with both dependencies unanswering, a call ends at its deadline, give or take
 * `SHUTDOWN_OVERRUN_MARGIN_MS`. Concurrent calls are serialised; a call after a completed shutdown
 * resolves at once.
 */
export function createCheckedShutdown(parts: ShutdownParts): CheckedShutdown {
  let drain: Promise<void> | undefined
  let finished = false
  let queue: Promise<unknown> = Promise.resolve()

  async function attempt(deadlineMs: number, signal: AbortSignal | undefined): Promise<void> {
    if (finished) return
    if (signal?.aborted === true) throw new ShutdownCancelledError()
    const startedAt = performance.now()
    parts.logger.info({ deadlineMs, owned: parts.owned() }, 'checked shutdown')
    drain ??= parts.stopAdmission()
    parts.abortOwned()
    let timer: NodeJS.Timeout | undefined
    let onAbort: (() => void) | undefined
    const deadline = new Promise<'deadline'>((resolve) => {
      timer = setTimeout(() => resolve('deadline'), deadlineMs)
    })
    // A caller that cancels its own call stops waiting; nothing was taken out of the drain (the
    // active jobs, their leases and heartbeats stay as they were), so a later call resumes it.
    const cancelled = new Promise<'cancelled'>((resolve) => {
      onAbort = () => resolve('cancelled')
      signal?.addEventListener('abort', onAbort, { once: true })
    })
    const outcome = await Promise.race([drain.then(() => 'drained' as const), deadline, cancelled])
    clearTimeout(timer)
    if (onAbort !== undefined) signal?.removeEventListener('abort', onAbort)
    if (outcome === 'cancelled') {
      parts.logger.warn({ owned: parts.owned() }, 'checked shutdown cancelled; ownership kept')
      throw new ShutdownCancelledError()
    }
    if (outcome === 'deadline') {
      const error = new ShutdownDeadlineError(deadlineMs, parts.owned())
      parts.logger.error(
        { owned: error.owned, attempts: parts.ownedAttempts?.() },
        'shutdown deadline passed; ownership kept, call again (once given up, the reconciler records what is still owned when its leases expire)',
      )
      throw error
    }
    // What is left of the same deadline bounds the steps after the drain.
    const rest = AbortSignal.timeout(
      Math.max(0, Math.round(startedAt + deadlineMs - performance.now())),
    )
    const reconciled = parts.reconcileOnce().then(
      () => true,
      (error: unknown) => {
        parts.logger.warn({ err: error }, 'final reconcile pass failed')
        return true
      },
    )
    const left: string[] = []
    if (!(await Promise.race([reconciled, aborted(rest)]))) left.push('final reconcile pass')
    left.push(...((await parts.closeAll(rest)) ?? []))
    finished = true
    if (left.length === 0) parts.logger.info('worker stopped')
    else
      parts.logger.warn(
        { left },
        'worker stopped at its shutdown deadline; what was left is for the reconcilers of other workers',
      )
  }

  return (deadlineMs, signal) => {
    const call = queue.then(() => attempt(deadlineMs, signal))
    queue = call.catch(() => undefined)
    return call
  }
}

/**
 * Checked shutdown, called again after each deadline (one log line per try) until the drain
 * completes: a slow child keeps the process alive, heartbeating, instead of turning its attempt
 * into process loss. Only `signal` ends the retrying early (a second stop signal, an operator's
 * hard deadline); then, and on any other error, this rejects.
 */
export async function shutdownUntilDrained(
  shutdown: CheckedShutdown,
  deadlineMs: number,
  logger: Logger,
  signal?: AbortSignal,
): Promise<void> {
  for (let round = 1; ; round += 1) {
    try {
      await shutdown(deadlineMs, signal)
      return
    } catch (error) {
      if (!(error instanceof ShutdownDeadlineError) || signal?.aborted === true) throw error
      logger.warn({ round, owned: error.owned }, 'checked shutdown not finished; trying again')
    }
  }
}
