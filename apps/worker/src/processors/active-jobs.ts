/** One attempt job a worker is running. */
export interface ActiveJob {
  /**
   * Its lease was confirmed lost: it writes nothing more and only waits for a child that has not
   * returned yet (still counting against the worker's concurrency).
   */
  markLost(): void
  end(): void
}

/**
 * The attempt jobs a worker runs, for its shutdown: the drain is complete once every job has
 * ended or only waits for a child whose lease was confirmed lost (the seed counts confirmed owner
 * loss as drained), even though such a job keeps its slot until its child returns.
 */
export interface ActiveJobs {
  begin(): ActiveJob
  /** Jobs running now, and of them those that only wait for a lost child. */
  readonly count: number
  readonly lost: number
  /** Resolves once every active job has ended or is lost (at once when none is active). */
  drained(): Promise<void>
}

export function createActiveJobs(): ActiveJobs {
  let count = 0
  let lost = 0
  let waiters: (() => void)[] = []
  const notify = (): void => {
    if (count !== lost) return
    const ready = waiters
    waiters = []
    for (const resolve of ready) resolve()
  }
  return {
    begin() {
      count += 1
      let isLost = false
      let ended = false
      return {
        markLost() {
          if (isLost || ended) return
          isLost = true
          lost += 1
          notify()
        },
        end() {
          if (ended) return
          ended = true
          count -= 1
          if (isLost) lost -= 1
          notify()
        },
      }
    },
    get count() {
      return count
    },
    get lost() {
      return lost
    },
    drained() {
      return count === lost
        ? Promise.resolve()
        : new Promise<void>((resolve) => waiters.push(resolve))
    },
  }
}
