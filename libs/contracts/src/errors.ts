import { z } from 'zod'

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
  RunNotFound: 'RUN_NOT_FOUND',
  /** The run is not active (settled already, or a continuation run nobody claimed). */
  RunNotActive: 'RUN_NOT_ACTIVE',
  /** The claim sent is not the current claim of the continuation, or its lease expired. */
  StaleClaim: 'STALE_CLAIM',
  /** A named result cannot be consumed by this run (`details.attemptIds`). */
  ResultNotConsumable: 'RESULT_NOT_CONSUMABLE',
  SessionNotFound: 'SESSION_NOT_FOUND',
  /** The session is behind its deletion fence: it admits nothing new. */
  SessionDeleted: 'SESSION_DELETED',
  /** No profile of that name in this deployment's profiles file. */
  UnknownProfile: 'UNKNOWN_PROFILE',
  /** The operation needs a hosted session (created with a profile), or a host-managed one. */
  SessionNotHosted: 'SESSION_NOT_HOSTED',
  /**
   * The delegation would take its hosted session past a budget of its profile (`details.budget`,
   * `details.limit`, `details.used`). Nothing was written.
   */
  BudgetExceeded: 'BUDGET_EXCEEDED',
  /** The parent attempt named is no attempt of this session, or it has finished. */
  ParentAttemptEnded: 'PARENT_ATTEMPT_ENDED',
  ArtifactNotFound: 'ARTIFACT_NOT_FOUND',
  WebhookNotFound: 'WEBHOOK_NOT_FOUND',
  /** The webhook URL is refused by the operator's destination policy (`details.reason`). */
  WebhookUrlRefused: 'WEBHOOK_URL_REFUSED',
  /** The artifact's retention ended: its content is deleted, its digest and size are kept. */
  ArtifactExpired: 'ARTIFACT_EXPIRED',
  /** The stored content no longer matches its digest; it is never sent. */
  ArtifactIntegrity: 'ARTIFACT_INTEGRITY',
  /** The `Range` asked for holds no byte of the artifact (`details.bytes`: its size). */
  RangeNotSatisfiable: 'RANGE_NOT_SATISFIABLE',
  PayloadTooLarge: 'PAYLOAD_TOO_LARGE',
  UriTooLong: 'URI_TOO_LONG',
  UnsupportedMediaType: 'UNSUPPORTED_MEDIA_TYPE',
  HeadersTooLarge: 'HEADERS_TOO_LARGE',
  RequestTimeout: 'REQUEST_TIMEOUT',
  NotFound: 'NOT_FOUND',
  /** No `Authorization: Bearer <key>`, or a key that is unknown or revoked. */
  Unauthorized: 'UNAUTHORIZED',
  /** The caller's key made more requests than its limit allows; `Retry-After` says when to retry. */
  RateLimited: 'RATE_LIMITED',
  NamespaceNotFound: 'NAMESPACE_NOT_FOUND',
  NamespaceExists: 'NAMESPACE_EXISTS',
  ApiKeyNotFound: 'API_KEY_NOT_FOUND',
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

/** The body of an error answer whose code is one of `codes`. */
export function errorBodySchemaOf(codes: readonly [ErrorCode, ...ErrorCode[]]) {
  return z.object({
    error: z.object({
      code: z.enum(codes),
      message: z.string(),
      details: z.record(z.string(), z.unknown()).optional(),
    }),
  })
}

/** The body of every error response: `{ error: { code, message, details? } }`. */
export const errorBodySchema = errorBodySchemaOf(
  Object.values(ErrorCode) as [ErrorCode, ...ErrorCode[]],
).meta({ id: 'ErrorBody' })
export type ErrorBody = z.infer<typeof errorBodySchema>
