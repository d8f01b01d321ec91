// Test support: holds real HTTP answers to the served OpenAPI document, with an outside validator
// (ajv, JSON Schema 2020-12, the dialect of OpenAPI 3.1), and records which operations were seen.
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js'
import addFormatsModule from 'ajv-formats'

// ajv-formats is CommonJS: its default export arrives as the module object under NodeNext.
const addFormats = addFormatsModule as unknown as typeof addFormatsModule.default

interface MediaDoc {
  readonly schema?: unknown
}
interface ResponseDoc {
  readonly description: string
  readonly headers?: Readonly<Record<string, { readonly schema: { readonly type: string } }>>
  readonly content?: Readonly<Record<string, MediaDoc>>
}
interface OperationDoc {
  readonly responses: Readonly<Record<string, ResponseDoc>>
  readonly security?: readonly unknown[]
  readonly requestBody?: unknown
  readonly parameters?: readonly { readonly in: string; readonly name: string }[]
}
export interface OpenApiDoc {
  readonly openapi: string
  readonly paths: Readonly<Record<string, Readonly<Record<string, OperationDoc>>>>
  readonly components?: { readonly schemas?: Readonly<Record<string, unknown>> }
}

/** An answer as the wire delivered it. */
export interface WireAnswer {
  readonly status: number
  readonly headers: Headers
  readonly text: string
}

export interface Operation {
  readonly method: string
  readonly path: string
  readonly doc: OperationDoc
}

/** Which documented operation a request is for: its method and the path template it matches. */
function templateRegex(path: string): RegExp {
  const pattern = path
    .split(/(\{[^}]+\})/)
    .map((part) =>
      part.startsWith('{') ? '[^/]+' : part.replaceAll(/[.*+?^${}()|[\]\\]/g, '\\$&'),
    )
    .join('')
  return new RegExp(`^${pattern}$`)
}

export function createContractChecker(doc: OpenApiDoc) {
  const ajv = new Ajv2020({ strict: false, allErrors: true })
  addFormats(ajv)
  // Component references point into the document; each compiled schema carries them as $defs.
  const defs = JSON.parse(
    JSON.stringify(doc.components?.schemas ?? {}).replaceAll('#/components/schemas/', '#/$defs/'),
  ) as Record<string, unknown>
  const compiled = new Map<string, ValidateFunction>()
  const operations: Operation[] = Object.entries(doc.paths).flatMap(([path, ops]) =>
    Object.entries(ops).map(([method, op]) => ({ method: method.toUpperCase(), path, doc: op })),
  )
  const matchers = operations.map((op) => ({ op, regex: templateRegex(op.path) }))
  /** `METHOD path` → the statuses seen. */
  const seen = new Map<string, Set<number>>()

  function validatorFor(key: string, schema: unknown): ValidateFunction {
    let validate = compiled.get(key)
    if (validate === undefined) {
      const text = JSON.stringify(schema).replaceAll('#/components/schemas/', '#/$defs/')
      validate = ajv.compile({ ...(JSON.parse(text) as object), $defs: defs })
      compiled.set(key, validate)
    }
    return validate
  }

  return {
    operations,
    /** The operation a request is for, or an error when the document has none. */
    operationOf(method: string, url: string): Operation {
      const path = new URL(url, 'http://baton').pathname
      const found = matchers.find((m) => m.op.method === method && m.regex.test(path))
      if (found === undefined) throw new Error(`${method} ${path}: no documented operation`)
      return found.op
    },
    /**
     * Fails unless the answer is one the document lists for the operation: a documented status,
     * its documented content type and schema (or no body), and its documented headers.
     */
    check(op: Operation, answer: WireAnswer): void {
      const where = `${op.method} ${op.path} → ${answer.status}`
      const documented = op.doc.responses[String(answer.status)]
      if (documented === undefined) {
        throw new Error(`${where}: status not documented (body ${answer.text.slice(0, 300)})`)
      }
      // Recorded now: any mismatch below throws and fails the test that made the call.
      const key = `${op.method} ${op.path}`
      seen.set(key, (seen.get(key) ?? new Set()).add(answer.status))
      for (const [name, header] of Object.entries(documented.headers ?? {})) {
        const value = answer.headers.get(name)
        if (value === null) throw new Error(`${where}: documented header ${name} is missing`)
        if (header.schema.type === 'integer' && !/^\d+$/.test(value)) {
          throw new Error(`${where}: header ${name} is not an integer: ${value}`)
        }
      }
      const contentType = answer.headers.get('content-type')
      if (documented.content === undefined) {
        if (answer.text !== '') throw new Error(`${where}: documented without a body, got one`)
        return
      }
      const essence = (type: string) => type.split(';')[0]?.trim().toLowerCase()
      const media = Object.entries(documented.content).find(
        ([type]) => essence(type) === essence(contentType ?? ''),
      )
      if (media === undefined) {
        throw new Error(`${where}: content-type ${contentType} is not documented`)
      }
      const [type, { schema }] = media
      const body = type.startsWith('application/json') ? parseJson(answer.text, where) : answer.text
      const validate = validatorFor(`${op.method} ${op.path} ${answer.status} ${type}`, schema)
      if (!validate(body)) {
        throw new Error(
          `${where}: body does not match the document: ${ajv.errorsText(validate.errors)}; body ${answer.text.slice(0, 500)}`,
        )
      }
    },
    /** Every operation's documented statuses that no checked answer had. */
    unseen(): { operation: string; statuses: number[] }[] {
      return operations.flatMap((op) => {
        const key = `${op.method} ${op.path}`
        const statuses = Object.keys(op.doc.responses)
          .map(Number)
          .filter((status) => !(seen.get(key)?.has(status) ?? false))
        return statuses.length === 0 ? [] : [{ operation: key, statuses }]
      })
    },
    /** The operations no checked answer came from. */
    unexercised(): string[] {
      return operations.map((op) => `${op.method} ${op.path}`).filter((key) => !seen.has(key))
    },
  }
}

export type ContractChecker = ReturnType<typeof createContractChecker>

function parseJson(text: string, where: string): unknown {
  try {
    return JSON.parse(text) as unknown
  } catch {
    throw new Error(`${where}: documented as JSON, got ${text.slice(0, 200)}`)
  }
}
