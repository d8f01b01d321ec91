import type { SwaggerOptions } from '@fastify/swagger'
import type { FastifySerializerCompiler } from 'fastify/types/schema.js'
import { jsonSchemaTransform, jsonSchemaTransformObject } from 'fastify-type-provider-zod'

/**
 * The document's tags, in the order its reader meets them, each with what it holds. Every
 * operation names one (`schema.tags`), and a generated client groups its methods by it.
 */
const TAGS = {
  Delegations:
    'Hand a task to a named subagent, one delegation or a batch; each creates an attempt',
  Attempts:
    'One execution of a delegated task: read it, wait on it once with a bound, steer it, cancel it',
  Agents: 'A delegated child agent: its durable history, which a continuation resumes from',
  Artifacts: 'Complete outputs above the inline bound, served byte for byte with their digest',
  Sessions:
    'Hosted sessions: created on a profile, their parent runs executed by the fleet one at a ' +
    'time; read them and their runs, wait on a run once with a bound',
  Runs:
    "A session's parent turns: queued on the fleet for a hosted session; for hosts that keep " +
    'their parent agent in their own application, started, read and settled by them; and the ' +
    "session's deletion fence",
  Continuations:
    "A finished child's result handed back exactly once, with a receipt, after its parent run " +
    'has ended: claim the next one, keep its lease, settle it',
  Webhooks:
    "Push delivery: a session's or a namespace's endpoint, to which terminal attempts and " +
    'admitted continuations are POSTed, signed as Standard Webhooks says; and what was delivered',
  Admin: 'Namespaces, their API keys and their webhooks (admin key)',
  Dashboard:
    "The ledger dashboard's JSON (admin key): attempts by state, live leases, recent terminals " +
    "and one attempt's timeline, across namespaces",
  Health: 'Liveness and readiness probes for orchestrators (no key)',
} as const

/** The tag an operation is grouped under. */
export type ApiTag = keyof typeof TAGS

/**
 * The OpenAPI 3.1 document served at `/docs/json`, generated from the routes' zod schemas (the
 * same contracts the typed client is written against). Every documented route answers only what
 * its `schema.response` lists; the contract test holds the real answers to the document.
 */
export function openApiOptions(hiddenPrefixes: readonly string[]): SwaggerOptions {
  return {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Baton API',
        version: '1.0.0',
        description:
          'Durable subagent delegation. Every error is `{ "error": { "code", "message", "details"? } }`. ' +
          'Besides the answers each operation lists, any request may get `408 REQUEST_TIMEOUT` or ' +
          '`431 HEADERS_TOO_LARGE` (refused before a route is matched), and an unknown route or ' +
          'method `404 NOT_FOUND`. With rate limiting on, answers to namespace keys carry ' +
          '`x-ratelimit-limit`, `x-ratelimit-remaining` and `x-ratelimit-reset`.',
        // Baton is not published under an open-source license: no right to use it is granted.
        license: { name: 'UNLICENSED', identifier: 'LicenseRef-Proprietary' },
        contact: { name: 'Baton maintainers' },
      },
      // Relative: the API that served this document (a client given the document from a file
      // sets its base URL, as it would for any other deployment).
      servers: [{ url: '/', description: 'The Baton API that served this document' }],
      tags: Object.entries(TAGS).map(([name, description]) => ({ name, description })),
      components: {
        securitySchemes: {
          apiKey: {
            type: 'http',
            scheme: 'bearer',
            description: "A namespace's API key (`bk_…`): the request acts in its namespace",
          },
          adminKey: {
            type: 'http',
            scheme: 'bearer',
            description: 'The admin key (`ADMIN_API_KEY`)',
          },
        },
      },
      security: [{ apiKey: [] }],
    },
    transform: (route) => {
      if (hiddenPrefixes.some((prefix) => route.url.startsWith(prefix))) {
        return { schema: { hide: true }, url: route.url }
      }
      const transformed = jsonSchemaTransform(route)
      keepContentHeaders(route.schema?.response, transformed.schema?.response)
      return transformed
    },
    transformObject: (document) => {
      const generated = jsonSchemaTransformObject(document)
      markOptionalBodies(generated as DocumentShape)
      return withoutUnusedComponents(generated as DocumentShape)
    },
  }
}

/**
 * Answers are written with plain `JSON.stringify`: a route's response schemas document its answers
 * but never parse, strip or transform them at runtime (that would cost a zod parse per answer).
 */
export const jsonSerializerCompiler: FastifySerializerCompiler<unknown> = () => (data) =>
  JSON.stringify(data)

/** The zod transform keeps only `description` and `content` of a content-typed answer. */
function keepContentHeaders(source: unknown, target: unknown): void {
  if (!isRecord(source) || !isRecord(target)) return
  for (const [status, answer] of Object.entries(source)) {
    const documented = target[status]
    if (isRecord(answer) && 'content' in answer && 'headers' in answer && isRecord(documented)) {
      documented.headers = answer.headers
    }
  }
}

/**
 * The component schemas no operation refers to (zod registers every named schema twice, as an
 * input and an output), left out so the document names only what Baton sends and takes.
 */
interface DocumentShape {
  readonly paths?: Readonly<Record<string, Readonly<Record<string, unknown>>>>
  readonly components?: { readonly schemas?: Readonly<Record<string, unknown>> }
}

/**
 * A body the route takes as `nullish` may be left out (cancel, runs): @fastify/swagger marks every
 * body required, so such bodies are marked optional here.
 */
function markOptionalBodies(document: DocumentShape): void {
  for (const operations of Object.values(document.paths ?? {})) {
    for (const operation of Object.values(operations)) {
      if (!isRecord(operation) || !isRecord(operation.requestBody)) continue
      const body = operation.requestBody
      const schema = isRecord(body.content) ? body.content['application/json'] : undefined
      const anyOf = isRecord(schema) && isRecord(schema.schema) ? schema.schema.anyOf : undefined
      if (Array.isArray(anyOf) && anyOf.some((s) => isRecord(s) && s.type === 'null')) {
        body.required = false
      }
    }
  }
}

function withoutUnusedComponents(document: DocumentShape): DocumentShape {
  const schemas = { ...document.components?.schemas }
  const { components: _components, ...rest } = document
  const used = new Set<string>()
  const visit = (text: string): void => {
    for (const match of text.matchAll(/"#\/components\/schemas\/([^"]+)"/g)) {
      const name = match[1]
      if (name === undefined || used.has(name)) continue
      used.add(name)
      visit(JSON.stringify(schemas[name] ?? null))
    }
  }
  visit(JSON.stringify(rest))
  for (const name of Object.keys(schemas)) if (!used.has(name)) delete schemas[name]
  return { ...document, components: { ...document.components, schemas } }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null
}
