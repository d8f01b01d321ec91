/** SQLSTATE knowledge lives here and nowhere else. */
export const SqlState = {
  UniqueViolation: '23505',
  ForeignKeyViolation: '23503',
  SerializationFailure: '40001',
  DeadlockDetected: '40P01',
  AdminShutdown: '57P01',
  CannotConnectNow: '57P03',
} as const

interface PgErrorLike {
  readonly code?: unknown
  readonly constraint?: unknown
}

function asPgError(error: unknown): PgErrorLike | undefined {
  return typeof error === 'object' && error !== null ? error : undefined
}

export function isUniqueViolation(error: unknown, constraint?: string): boolean {
  const e = asPgError(error)
  return (
    e?.code === SqlState.UniqueViolation &&
    (constraint === undefined || e.constraint === constraint)
  )
}

/**
 * Whether a failed store call may succeed if simply tried again: connection loss, a terminated
 * backend, a server restarting, serialization conflicts. Everything else is a defect or bad input.
 */
export function isTransientStoreError(error: unknown): boolean {
  const e = asPgError(error)
  if (e === undefined) return false
  const code = typeof e.code === 'string' ? e.code : ''
  if (code.startsWith('08')) return true // connection exceptions
  if (
    code === SqlState.SerializationFailure ||
    code === SqlState.DeadlockDetected ||
    code === SqlState.AdminShutdown ||
    code === SqlState.CannotConnectNow
  ) {
    return true
  }
  return (
    ['ECONNRESET', 'ECONNREFUSED', 'EPIPE', 'ETIMEDOUT'].includes(code) ||
    (error instanceof Error &&
      /Connection terminated|connection timeout|Client has encountered a connection error/i.test(
        error.message,
      ))
  )
}

/**
 * Runs an idempotent read, trying again (on a fresh pooled connection) when the connection it
 * used turned out to be dead — a terminated backend is discovered only when a query uses it.
 * Never for writes: a write whose response was lost may have landed.
 */
export async function retryTransientRead<T>(read: () => Promise<T>, attempts = 3): Promise<T> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await read()
    } catch (error) {
      if (attempt >= attempts || !isTransientStoreError(error)) throw error
    }
  }
}
