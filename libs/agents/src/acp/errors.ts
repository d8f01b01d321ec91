/**
 * The acp provider's failure model. `start()` rejects only with an {@link AcpProviderError}; a run
 * that fails after readiness never rejects — it resolves with a non-completed stop reason and one
 * of Baton's durable `FailureCategory` values (from `@baton/contracts`), safe to persist and show.
 */

/** Why `start()` rejected. */
export const AcpStartErrorCode = {
  /** `request.signal` fired before the run was published. */
  StartAborted: 'start_aborted',
  /** The agent did not finish `initialize` + `session/new` within `startTimeoutMs`. */
  StartTimeout: 'start_timeout',
  /** The agent command could not be spawned (missing binary, bad cwd, …). */
  SpawnFailed: 'spawn_failed',
  /** The agent answered the handshake with an error or an unsupported protocol version. */
  HandshakeFailed: 'handshake_failed',
  /** The agent process exited before the session existed. */
  AgentProcessExited: 'agent_process_exited',
} as const
export type AcpStartErrorCode = (typeof AcpStartErrorCode)[keyof typeof AcpStartErrorCode]

export class AcpProviderError extends Error {
  override readonly name = 'AcpProviderError'
  readonly code: AcpStartErrorCode
  /** Whether starting again may succeed: timeouts and crashes may be transient; the rest are not. */
  readonly retryable: boolean

  constructor(code: AcpStartErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options)
    this.code = code
    this.retryable =
      code === AcpStartErrorCode.StartTimeout || code === AcpStartErrorCode.AgentProcessExited
  }
}
