import { DependencyFailure, TRANSIENT_SOCKET_CODES } from '@baton/contracts'

/**
 * Redis error replies a retry may get past: loading a dataset after a restart, a script or the
 * server busy, a cluster resharding or failing over, a write that reached a replica (a former
 * primary), a server out of memory or out of client slots.
 */
const TRANSIENT_REPLY =
  /^(LOADING|BUSY|TRYAGAIN|CLUSTERDOWN|MASTERDOWN|READONLY|NOREPLICAS|OOM|ERR max number of clients reached)\b/

/**
 * What ioredis says when a command outlived its `commandTimeout`, when the connection was closed
 * under it or could not be written, when its retries ran out, or when a cluster could not be
 * reached (none carries a code).
 */
const TRANSIENT_CLIENT_MESSAGE =
  /^(Command timed out|Connection is closed|Stream isn't writeable|Reached the max retries per request limit|Failed to refresh slots cache|None of startup nodes is available|connect ETIMEDOUT)/

/**
 * What BullMQ says when the job a worker held is no longer its own: its lock is gone or taken, or
 * the job itself is (Redis flushed, the job removed).
 */
const LOST_JOB_MESSAGE = /^(Missing lock for job|Lock mismatch for job|Missing key for job)/

/**
 * The one classification of Redis errors (see `DependencyFailure`):
 * - transient: the socket errors of a connection that broke, ioredis' timeouts and closed
 *   connections, and the replies of a server that is loading, busy, failing over or full;
 * - confirmed loss: BullMQ's answer that a job's lock or the job itself is gone;
 * - bug: everything else (Redis never refuses Baton's values: the ledger holds every input).
 */
export function classifyRedisError(error: unknown): DependencyFailure {
  if (typeof error !== 'object' || error === null) return DependencyFailure.Bug
  const code = (error as { code?: unknown }).code
  if (typeof code === 'string' && TRANSIENT_SOCKET_CODES.has(code))
    return DependencyFailure.Transient
  const message = error instanceof Error ? error.message : ''
  if ((error as { name?: unknown }).name === 'MaxRetriesPerRequestError')
    return DependencyFailure.Transient
  if (TRANSIENT_REPLY.test(message) || TRANSIENT_CLIENT_MESSAGE.test(message))
    return DependencyFailure.Transient
  if (LOST_JOB_MESSAGE.test(message)) return DependencyFailure.ConfirmedLoss
  const cause = (error as { cause?: unknown }).cause
  if (cause !== undefined && cause !== error) return classifyRedisError(cause)
  return DependencyFailure.Bug
}

/** Whether a failed Redis call may succeed if simply tried again (see `classifyRedisError`). */
export function isTransientRedisError(error: unknown): boolean {
  return classifyRedisError(error) === DependencyFailure.Transient
}
