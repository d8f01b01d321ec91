// When `npm run chaos` stops waiting after the faults: not at a fixed time, but once nothing
// has ended for one quiescence timeout.

/**
 * A deadline that moves while the ledger makes progress: it fires one quiescence timeout after
 * the count it is fed last went down. A 2-core machine drains the backlog a fault left behind at
 * its own pace; that is progress, not a stuck ledger.
 */
export class ProgressDeadline {
  private readonly timeoutMs: number
  private best = Number.POSITIVE_INFINITY
  private until: number

  constructor(timeoutMs: number) {
    this.timeoutMs = timeoutMs
    this.until = Date.now() + timeoutMs
  }

  /**
   * Feeds how much is still open (infinity when it could not be read: not progress); answers
   * whether the deadline has passed.
   */
  passed(open: number): boolean {
    if (open < this.best) {
      this.best = open
      this.until = Date.now() + this.timeoutMs
    }
    return Date.now() > this.until
  }
}
