/**
 * Baton's error vocabulary. One const object and its derived union; `BatonError` carries the code,
 * whether a retry can help, and the cause. HTTP status knowledge lives only in the API's error
 * mapper; SQLSTATE knowledge lives only in the store.
 */
export const ErrorCode = {
  ValidationFailed: 'VALIDATION_FAILED',
  UnknownSubagent: 'UNKNOWN_SUBAGENT',
  /** The subagent is known but this deployment cannot run it now (`details.reason`). */
  SubagentUnavailable: 'SUBAGENT_UNAVAILABLE',
  AgentNotFound: 'AGENT_NOT_FOUND',
  AgentBusy: 'AGENT_BUSY',
  AttemptNotFound: 'ATTEMPT_NOT_FOUND',
  AttemptTerminal: 'ATTEMPT_TERMINAL',
  SteeringUnsupported: 'STEERING_UNSUPPORTED',
  IdempotencyKeyReused: 'IDEMPOTENCY_KEY_REUSED',
  ArtifactNotFound: 'ARTIFACT_NOT_FOUND',
  /** The artifact's retention ended: its content is deleted, its digest and size are kept. */
  ArtifactExpired: 'ARTIFACT_EXPIRED',
  /** The stored content no longer matches its digest; it is never sent. */
  ArtifactIntegrity: 'ARTIFACT_INTEGRITY',
  PayloadTooLarge: 'PAYLOAD_TOO_LARGE',
  UriTooLong: 'URI_TOO_LONG',
  UnsupportedMediaType: 'UNSUPPORTED_MEDIA_TYPE',
  HeadersTooLarge: 'HEADERS_TOO_LARGE',
  RequestTimeout: 'REQUEST_TIMEOUT',
  NotFound: 'NOT_FOUND',
  NotReady: 'NOT_READY',
  Internal: 'INTERNAL',
} as const
export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode]

export interface BatonErrorOptions {
  readonly retryable?: boolean
  readonly details?: Readonly<Record<string, unknown>>
  readonly cause?: unknown
}

export class BatonError extends Error {
  readonly code: ErrorCode
  readonly retryable: boolean
  readonly details: Readonly<Record<string, unknown>> | undefined

  constructor(code: ErrorCode, message: string, options: BatonErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause })
    this.name = 'BatonError'
    this.code = code
    this.retryable = options.retryable ?? false
    this.details = options.details
  }
}

/** The body of every error response: `{ error: { code, message, details? } }`. */
export interface ErrorBody {
  readonly error: {
    readonly code: ErrorCode
    readonly message: string
    readonly details?: Readonly<Record<string, unknown>>
  }
}
