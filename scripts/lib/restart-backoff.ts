// When `npm run up` restarts a process that exited unexpectedly: soon the first time, slower while
// it keeps failing (a crash loop must not spin two cores), and soon again once it has been healthy.

export const FIRST_RESTART_DELAY_MS = 500
export const MAX_RESTART_DELAY_MS = 10_000
/** A process that ran this long before it exited counts as healthy: its next restart is quick. */
export const HEALTHY_RUN_MS = 60_000

export interface RestartBackoff {
  /** Records an unexpected exit after `ranMs` of running; answers how long to wait before the restart. */
  afterExit(ranMs: number): number
  /** Records a restart that did not become ready; answers how long to wait before the next one. */
  afterFailedStart(): number
}

export function createRestartBackoff(): RestartBackoff {
  let failures = 0
  const next = (): number => {
    failures += 1
    return Math.min(FIRST_RESTART_DELAY_MS * 2 ** (failures - 1), MAX_RESTART_DELAY_MS)
  }
  return {
    afterExit(ranMs) {
      if (ranMs >= HEALTHY_RUN_MS) failures = 0
      return next()
    },
    afterFailedStart: next,
  }
}
