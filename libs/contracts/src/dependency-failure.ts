/**
 * What a failed call to Postgres or Redis means for its caller: the one classification of
 * dependency errors. Each dependency maps its own errors into it in one place (the store:
 * `classifyStoreError`; the queue: `classifyRedisError`), and callers branch on this, never on a
 * code or a message.
 */
export const DependencyFailure = {
  /**
   * Try again: a failover, an overloaded or restarting server, a cancelled or timed-out call, a
   * reset or refused connection. Whatever the caller owns it still owns.
   */
  Transient: 'transient',
  /**
   * The dependency confirmed that something the caller held is gone (a queue job's lock, the job
   * itself): stop acting on it. A ledger lease is never lost by an error: a fenced statement
   * answers its loss as an outcome.
   */
  ConfirmedLoss: 'confirmed_loss',
  /** The dependency refused the caller's values: no retry helps; that item fails alone. */
  BadInput: 'bad_input',
  /** Anything else: a defect, Baton's or the dependency's. A few tries, then a truthful failure. */
  Bug: 'bug',
} as const

export type DependencyFailure = (typeof DependencyFailure)[keyof typeof DependencyFailure]

/** Socket errors a connection to either dependency fails with while it fails over or restarts. */
export const TRANSIENT_SOCKET_CODES: ReadonlySet<string> = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
])
