import { STATUS_CODES } from 'node:http'
import type { Socket } from 'node:net'
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify'
import { hasZodFastifySchemaValidationErrors } from 'fastify-type-provider-zod'
import { BatonError, ErrorCode, type ErrorBody } from '@baton/contracts'
import { isDataError, isTransientStoreError } from '@baton/store'

/** HTTP status knowledge lives here and nowhere else. */
export const STATUS: Readonly<Record<ErrorCode, number>> = {
  [ErrorCode.ValidationFailed]: 400,
  [ErrorCode.UnknownSubagent]: 400,
  [ErrorCode.SubagentUnavailable]: 400,
  [ErrorCode.AgentNotFound]: 404,
  [ErrorCode.AttemptNotFound]: 404,
  [ErrorCode.ArtifactNotFound]: 404,
  [ErrorCode.WebhookNotFound]: 404,
  [ErrorCode.WebhookUrlRefused]: 400,
  [ErrorCode.ArtifactExpired]: 410,
  [ErrorCode.ArtifactIntegrity]: 500,
  [ErrorCode.RangeNotSatisfiable]: 416,
  [ErrorCode.NotFound]: 404,
  [ErrorCode.NamespaceNotFound]: 404,
  [ErrorCode.ApiKeyNotFound]: 404,
  [ErrorCode.NamespaceExists]: 409,
  [ErrorCode.Unauthorized]: 401,
  [ErrorCode.RateLimited]: 429,
  [ErrorCode.RunNotFound]: 404,
  [ErrorCode.SessionNotFound]: 404,
  [ErrorCode.RunNotActive]: 409,
  [ErrorCode.StaleClaim]: 409,
  [ErrorCode.ResultNotConsumable]: 409,
  [ErrorCode.SessionDeleted]: 409,
  [ErrorCode.UnknownProfile]: 400,
  [ErrorCode.SessionNotHosted]: 409,
  [ErrorCode.BudgetExceeded]: 409,
  [ErrorCode.ParentAttemptEnded]: 409,
  [ErrorCode.AgentBusy]: 409,
  [ErrorCode.AttemptTerminal]: 409,
  [ErrorCode.SteeringUnsupported]: 409,
  [ErrorCode.IdempotencyKeyReused]: 409,
  [ErrorCode.RequestTimeout]: 408,
  [ErrorCode.PayloadTooLarge]: 413,
  [ErrorCode.UriTooLong]: 414,
  [ErrorCode.UnsupportedMediaType]: 415,
  [ErrorCode.HeadersTooLarge]: 431,
  [ErrorCode.NotReady]: 503,
  [ErrorCode.Internal]: 500,
}

/** The status and body a BatonError leaves the API with (a batch item's answer uses it too). */
export function errorAnswer(error: BatonError): { status: number; body: ErrorBody } {
  return { status: STATUS[error.code], body: body(error.code, error.message, error.details) }
}

function body(
  code: ErrorCode,
  message: string,
  details?: Readonly<Record<string, unknown>>,
): ErrorBody {
  return { error: details === undefined ? { code, message } : { code, message, details } }
}

/** The code of a framework-level client error, by the status the framework gave it. */
const CLIENT_ERROR_CODE: Readonly<Record<number, ErrorCode>> = {
  404: ErrorCode.NotFound,
  408: ErrorCode.RequestTimeout,
  413: ErrorCode.PayloadTooLarge,
  414: ErrorCode.UriTooLong,
  415: ErrorCode.UnsupportedMediaType,
  431: ErrorCode.HeadersTooLarge,
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
  if (isDataError(error)) {
    // Validation refuses every value known to be unstorable; this is the net under it. A batched
    // accept that fails so is retried item by item first, so only the offender's request sees it.
    request.log.warn({ err: error }, 'ledger refused a value the contracts let through')
    return reply
      .status(400)
      .send(body(ErrorCode.ValidationFailed, 'a value in the request cannot be stored'))
  }
  if (error.statusCode !== undefined && error.statusCode >= 400 && error.statusCode < 500) {
    const code = CLIENT_ERROR_CODE[error.statusCode] ?? ErrorCode.ValidationFailed
    return reply.status(STATUS[code]).send(body(code, error.message))
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

/**
 * Errors the router raises before a route is found (a malformed URL component, a parameter longer
 * than any route allows). Their own messages echo the URL back; ours name the condition.
 */
export function frameworkErrorHandler(
  error: FastifyError,
  request: FastifyRequest,
  reply: FastifyReply,
): void {
  if (error.code === 'FST_ERR_MAX_PARAM_LENGTH') {
    void reply.status(414).send(body(ErrorCode.UriTooLong, 'a path parameter is too long'))
    return
  }
  if (error.code === 'FST_ERR_BAD_URL') {
    void reply
      .status(400)
      .send(body(ErrorCode.ValidationFailed, 'the URL has a malformed percent-encoding'))
    return
  }
  errorHandler(error, request, reply)
}

/**
 * Errors Node's HTTP parser raises before Fastify sees a request (headers too large, a malformed
 * request line, a client too slow): answered on the raw socket, in the same body shape.
 */
export function clientErrorHandler(
  error: Error & { code?: string; rawPacket?: unknown },
  socket: Socket,
): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return
  const [code, message] =
    error.code === 'HPE_HEADER_OVERFLOW'
      ? [ErrorCode.HeadersTooLarge, 'request headers are too large']
      : error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? [ErrorCode.RequestTimeout, 'the request was not received in time']
        : [ErrorCode.ValidationFailed, 'malformed HTTP request']
  const status = STATUS[code]
  const payload = JSON.stringify(body(code, message))
  // An answer to HEAD has no body: a client would read one as data after the answer.
  const head =
    Buffer.isBuffer(error.rawPacket) &&
    error.rawPacket.subarray(0, 5).toString('latin1') === 'HEAD '
  if (socket.writable) {
    socket.write(
      `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}\r\nContent-Length: ${Buffer.byteLength(payload)}\r\n` +
        `Content-Type: application/json; charset=utf-8\r\nConnection: close\r\n\r\n${head ? '' : payload}`,
    )
  }
  socket.destroy(error)
}

/** An unknown route, or a known path with a method it does not have: both `404 NOT_FOUND`. */
export function notFoundHandler(request: FastifyRequest, reply: FastifyReply): FastifyReply {
  return reply
    .status(404)
    .send(body(ErrorCode.NotFound, `no route for ${request.method} ${request.url}`))
}
