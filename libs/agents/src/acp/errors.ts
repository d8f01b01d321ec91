/**
 * The acp provider's failure model. `start()` rejects only with an {@link AcpProviderError}; a run
 * that fails after readiness never rejects — it resolves with a non-completed stop reason and one
 * of the {@link AcpFailureCategory} values, which are safe to persist and show (never a stack).
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

/** Safe public failure categories carried by `SubagentResult.failureCategory`. */
export const AcpFailureCategory = {
  Cancelled: 'cancelled',
  MaxTokens: 'max_tokens',
  Refusal: 'refusal',
  MaxTurnRequests: 'max_turn_requests',
  UnknownStopReason: 'unknown_stop_reason',
  /** The agent process died (crashed, was killed) while the prompt was running. */
  AgentProcessExited: 'agent_process_exited',
  /** The stdio connection closed while the process stayed up. */
  AgentConnectionClosed: 'agent_connection_closed',
  /** The agent answered `session/prompt` with a JSON-RPC error. */
  AgentRequestFailed: 'agent_request_failed',
} as const
export type AcpFailureCategory = (typeof AcpFailureCategory)[keyof typeof AcpFailureCategory]

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
