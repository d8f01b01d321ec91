import { z, type ZodType } from 'zod'
import { ErrorCode, errorBodySchemaOf } from '@baton/contracts'
import { STATUS } from './errors.ts'

/**
 * What a route can answer, for its `schema.response`: each success with its schema, and each error
 * status with the error body restricted to the codes the route can give there. A route names its
 * own refusals; the statuses come from `STATUS` (errors.ts), the one place that maps codes to HTTP.
 * The schemas describe answers for the OpenAPI document only: the API's serializer does not parse
 * answers with them (see `jsonSerializerCompiler`), and the contract test shows answers conform.
 */
export const Refusals = {
  /** Any route behind a namespace's key: no or a bad key, over the rate limit, ledger down. */
  tenant: [ErrorCode.Unauthorized, ErrorCode.RateLimited, ErrorCode.NotReady, ErrorCode.Internal],
  /** Any route behind the admin key (never rate limited). */
  admin: [ErrorCode.Unauthorized, ErrorCode.NotReady, ErrorCode.Internal],
  /** Path parameters: a malformed one, or one far longer than any id (refused by the router). */
  params: [ErrorCode.ValidationFailed, ErrorCode.UriTooLong],
  /** A query string that does not validate. */
  query: [ErrorCode.ValidationFailed],
  /** A JSON body: malformed or invalid, above `BODY_LIMIT_BYTES`, or not `application/json`. */
  body: [ErrorCode.ValidationFailed, ErrorCode.PayloadTooLarge, ErrorCode.UnsupportedMediaType],
} as const satisfies Record<string, readonly ErrorCode[]>

/** A success whose body is not JSON (an artifact's bytes). */
export interface ContentAnswer {
  readonly description: string
  readonly content: Readonly<Record<string, { readonly schema: ZodType }>>
  readonly headers?: Readonly<Record<string, HeaderDoc>>
}

/** A response header as @fastify/swagger takes it: its JSON schema, with a description. */
interface HeaderDoc {
  readonly description: string
  readonly type: 'string' | 'integer'
}

const RATE_LIMIT_HEADERS: Readonly<Record<string, HeaderDoc>> = {
  'retry-after': {
    description: 'Seconds until the key may call again',
    type: 'integer',
  },
  'x-ratelimit-limit': {
    description: 'Requests the key may make per window',
    type: 'integer',
  },
  'x-ratelimit-remaining': {
    description: 'Requests left in this window',
    type: 'integer',
  },
  'x-ratelimit-reset': {
    description: 'Seconds until the window resets',
    type: 'integer',
  },
}

/** Headers an error status always carries. */
const ERROR_HEADERS: Readonly<Record<number, Readonly<Record<string, HeaderDoc>>>> = {
  401: {
    'www-authenticate': {
      description: 'The scheme to authenticate with (`Bearer`; `Basic` on the queue dashboard)',
      type: 'string',
    },
  },
  429: RATE_LIMIT_HEADERS,
}

/** A success answer: its schema and what it means. */
export function answer<T extends ZodType>(description: string, schema: T): T {
  return schema.meta({ description })
}

/** An answer without a body (`204`): documented with no content. */
export function noContent(description: string): ZodType<undefined> {
  return z.undefined().meta({ description })
}

/**
 * The `schema.response` of a route: its successes, and one error body per status its refusals
 * (each a list of codes, e.g. `Refusals.tenant`) map to, its `code` an enum of those codes.
 */
export function answers<S extends Readonly<Record<number, ZodType | ContentAnswer>>>(
  successes: S,
  ...refusals: readonly (readonly ErrorCode[])[]
): S & Record<number, ZodType> {
  const byStatus = new Map<number, ErrorCode[]>()
  for (const code of new Set(refusals.flat())) {
    const status = STATUS[code]
    byStatus.set(status, [...(byStatus.get(status) ?? []), code])
  }
  const errors: Record<number, ZodType> = {}
  for (const [status, codes] of [...byStatus].sort(([a], [b]) => a - b)) {
    const [first, ...rest] = codes
    if (first === undefined) continue
    const headers = ERROR_HEADERS[status]
    errors[status] = errorBodySchemaOf([first, ...rest]).meta({
      description: `Refused: ${codes.map((c) => `\`${c}\``).join(', ')} (the body's \`error.code\`)`,
      ...(headers === undefined ? {} : { headers }),
    })
  }
  return { ...errors, ...successes }
}
