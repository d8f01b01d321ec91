import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify'
import { hasZodFastifySchemaValidationErrors } from 'fastify-type-provider-zod'
import { BatonError, ErrorCode, type ErrorBody } from '@baton/contracts'
import { isTransientStoreError } from '@baton/store'

/** HTTP status knowledge lives here and nowhere else. */
export const STATUS: Readonly<Record<ErrorCode, number>> = {
  [ErrorCode.ValidationFailed]: 400,
  [ErrorCode.UnknownSubagent]: 400,
  [ErrorCode.SubagentUnavailable]: 400,
  [ErrorCode.AgentNotFound]: 404,
  [ErrorCode.AttemptNotFound]: 404,
  [ErrorCode.NotFound]: 404,
  [ErrorCode.AgentBusy]: 409,
  [ErrorCode.AttemptTerminal]: 409,
  [ErrorCode.SteeringUnsupported]: 409,
  [ErrorCode.IdempotencyKeyReused]: 409,
  [ErrorCode.PayloadTooLarge]: 413,
  [ErrorCode.UnsupportedMediaType]: 415,
  [ErrorCode.NotReady]: 503,
  [ErrorCode.Internal]: 500,
}

function body(
  code: ErrorCode,
  message: string,
  details?: Readonly<Record<string, unknown>>,
): ErrorBody {
  return { error: details === undefined ? { code, message } : { code, message, details } }
}

/**
 * Every error leaves as `{ error: { code, message, details? } }`. Validation failures list the
 * offending paths; anything unexpected is a 500 with a generic message (the log has the detail).
 */
export function errorHandler(
  error: FastifyError,
  request: FastifyRequest,
  reply: FastifyReply,
): FastifyReply {
  if (error instanceof BatonError) {
    return reply.status(STATUS[error.code]).send(body(error.code, error.message, error.details))
  }
  if (hasZodFastifySchemaValidationErrors(error)) {
    const issues = error.validation.map((v) => ({
      path: `${error.validationContext ?? 'body'}${v.instancePath}`,
      message: v.message ?? 'invalid',
    }))
    return reply.status(400).send(
      body(ErrorCode.ValidationFailed, `invalid ${error.validationContext ?? 'request'}`, {
        issues,
      }),
    )
  }
  switch (error.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return reply.status(413).send(body(ErrorCode.PayloadTooLarge, 'request body is too large'))
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return reply.status(415).send(body(ErrorCode.UnsupportedMediaType, 'send application/json'))
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return reply
        .status(400)
        .send(body(ErrorCode.ValidationFailed, 'request body is not valid JSON'))
    default:
      break
  }
  if (error.statusCode !== undefined && error.statusCode >= 400 && error.statusCode < 500) {
    return reply.status(error.statusCode).send(body(ErrorCode.ValidationFailed, error.message))
  }
  if (isTransientStoreError(error)) {
    // The ledger connection failed mid-request. The write may or may not have landed (a lost
    // response): reads and cancels are safe to retry; a retried delegation is a new delegation.
    request.log.warn({ err: error }, 'ledger unavailable')
    return reply
      .status(503)
      .send(
        body(
          ErrorCode.NotReady,
          'the ledger was briefly unavailable; the request may not have been recorded',
        ),
      )
  }
  request.log.error({ err: error }, 'unhandled error')
  return reply.status(500).send(body(ErrorCode.Internal, 'internal error'))
}

export function notFoundHandler(request: FastifyRequest, reply: FastifyReply): FastifyReply {
  return reply
    .status(404)
    .send(body(ErrorCode.NotFound, `no route for ${request.method} ${request.url}`))
}
