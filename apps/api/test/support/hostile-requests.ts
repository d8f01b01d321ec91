// Used only by hostile-property.int.test.ts: requests generated from the served OpenAPI document
// (valid-looking ones first), then bent by hostile mutations. Nothing here knows a route by name,
// so a route added later is covered as soon as it is documented; a schema construct this module
// cannot generate from throws, which fails the test instead of skipping the route.
import fc from 'fast-check'

/** The subset of JSON Schema the route schemas use (as `@fastify/swagger` documents them). */
export interface JsonSchema {
  readonly type?: string
  readonly properties?: Readonly<Record<string, JsonSchema>>
  readonly required?: readonly string[]
  readonly additionalProperties?: boolean | JsonSchema
  readonly items?: JsonSchema
  readonly anyOf?: readonly JsonSchema[]
  readonly enum?: readonly unknown[]
  readonly const?: unknown
  readonly nullable?: boolean
  readonly minLength?: number
  readonly maxLength?: number
  readonly minItems?: number
  readonly maxItems?: number
  readonly minimum?: number
  readonly maximum?: number
  readonly pattern?: string
  readonly format?: string
}

export interface ParamDoc {
  readonly in: 'path' | 'query' | 'header'
  readonly name: string
  readonly required: boolean
  readonly schema: JsonSchema
}

export interface RouteDoc {
  readonly method: string
  /** The documented path, `{name}` for each path parameter. */
  readonly path: string
  readonly params: readonly ParamDoc[]
  readonly body: JsonSchema | undefined
  /** Admin routes take the admin key; every other documented route a namespace's key. */
  readonly admin: boolean
}

/** Schema keywords that change what a value may be and that this module does not model. */
const UNMODELLED = ['$ref', 'oneOf', 'allOf', 'not', 'if', 'patternProperties'] as const
const FORMATS = new Set(['uuid', 'uri'])

/** Every documented operation of the document, checked to be something this module can generate. */
export function routesFromOpenApi(doc: {
  readonly paths: Readonly<Record<string, Readonly<Record<string, unknown>>>>
  readonly components?: { readonly schemas?: Readonly<Record<string, unknown>> }
}): RouteDoc[] {
  const inline = (schema: JsonSchema): JsonSchema => inlineRefs(schema, doc.components?.schemas)
  const routes: RouteDoc[] = []
  for (const [path, operations] of Object.entries(doc.paths)) {
    for (const [method, raw] of Object.entries(operations)) {
      const op = raw as {
        parameters?: { in: string; name: string; required?: boolean; schema?: JsonSchema }[]
        requestBody?: { content: Record<string, { schema?: JsonSchema }> }
      }
      const where = `${method.toUpperCase()} ${path}`
      const params = (op.parameters ?? []).map((p): ParamDoc => {
        if (p.in !== 'path' && p.in !== 'query' && p.in !== 'header') {
          throw new Error(`${where}: no generator for a parameter in ${p.in} (${p.name})`)
        }
        if (p.schema === undefined) throw new Error(`${where}: parameter ${p.name} has no schema`)
        const schema = inline(p.schema)
        assertGeneratable(schema, `${where} ${p.in} ${p.name}`)
        return { in: p.in, name: p.name, required: p.required === true, schema }
      })
      for (const name of path.matchAll(/\{([^}]+)\}/g)) {
        if (!params.some((p) => p.in === 'path' && p.name === name[1])) {
          throw new Error(`${where}: path parameter ${name[1]} is not documented`)
        }
      }
      let body: JsonSchema | undefined
      if (op.requestBody !== undefined) {
        const types = Object.keys(op.requestBody.content)
        const documented = op.requestBody.content['application/json']?.schema
        if (types.length !== 1 || documented === undefined) {
          throw new Error(`${where}: no generator for a body of ${types.join(', ')}`)
        }
        const json = inline(documented)
        assertGeneratable(json, `${where} body`)
        body = json
      }
      routes.push({
        method: method.toUpperCase(),
        path,
        params,
        body,
        admin: path.startsWith('/v1/admin/') || path.startsWith('/admin/'),
      })
    }
  }
  return routes
}

/**
 * The schema with each `$ref` to `#/components/schemas/<name>` replaced by that schema; a
 * reference to anything else is left for `assertGeneratable` to refuse.
 */
function inlineRefs(
  schema: JsonSchema,
  components: Readonly<Record<string, unknown>> | undefined,
  seen: ReadonlySet<string> = new Set(),
): JsonSchema {
  const walk = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(walk)
    if (value === null || typeof value !== 'object') return value
    const ref = (value as { $ref?: unknown }).$ref
    const name =
      typeof ref === 'string' ? /^#\/components\/schemas\/(.+)$/.exec(ref)?.[1] : undefined
    if (name !== undefined && components?.[name] !== undefined && !seen.has(name)) {
      return inlineRefs(components[name] as JsonSchema, components, new Set([...seen, name]))
    }
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, walk(v)]))
  }
  return walk(schema) as JsonSchema
}

function assertGeneratable(schema: JsonSchema, at: string): void {
  for (const keyword of UNMODELLED) {
    if (keyword in schema) throw new Error(`${at}: no generator for "${keyword}"`)
  }
  if (schema.format !== undefined && !FORMATS.has(schema.format)) {
    throw new Error(`${at}: no generator for format "${schema.format}"`)
  }
  if (schema.anyOf !== undefined) {
    schema.anyOf.forEach((s, i) => assertGeneratable(s, `${at} anyOf/${i}`))
    return
  }
  if (schema.enum !== undefined || 'const' in schema) return
  switch (schema.type) {
    case undefined:
      if (Object.keys(schema).some((k) => k !== 'nullable' && k !== 'description')) {
        throw new Error(`${at}: no generator for an untyped schema ${JSON.stringify(schema)}`)
      }
      return
    case 'object':
      for (const [name, s] of Object.entries(schema.properties ?? {}))
        assertGeneratable(s, `${at}/${name}`)
      if (typeof schema.additionalProperties === 'object')
        assertGeneratable(schema.additionalProperties, `${at}/*`)
      return
    case 'array':
      assertGeneratable(schema.items ?? {}, `${at}/[]`)
      return
    case 'string':
    case 'integer':
    case 'number':
    case 'boolean':
    case 'null':
      return
    default:
      throw new Error(`${at}: no generator for type "${schema.type}"`)
  }
}

/** An id the run knows, and which namespace owns the object it names (undefined: none). */
export interface KnownId {
  readonly id: string
  readonly namespace: string | undefined
}

/**
 * Values the generator draws for a named field (path parameter or body property) besides what
 * its schema allows, so requests reach real objects: ids of this run's attempts, agents and keys,
 * the subagent that exists, scripts the scripted child reads. Read when a request is rendered, so
 * ids created during the run join in.
 */
export interface Hints {
  readonly ids: Readonly<Record<string, readonly KnownId[]>>
  readonly values: Readonly<Record<string, readonly unknown[]>>
  /**
   * Fields whose valid values come only from this list, never from the schema: a wait bound (a
   * valid long wait on an attempt no worker runs would hold the sequential run that long).
   */
  readonly only: Readonly<Record<string, readonly unknown[]>>
  /** Schemas for the elements of an array property documented as `items: {}`. */
  readonly itemSchemas: Readonly<Record<string, JsonSchema>>
}

/** How a request authenticates. */
export type AuthKind =
  | 'tenant'
  | 'other-tenant'
  | 'admin'
  | 'none'
  | 'basic'
  | 'bearer-empty'
  | 'unknown-key'
  | 'revoked-key'
  | 'key-with-junk'
  | 'long-key'
  | 'huge-key'
  | 'lowercase-scheme'

export interface Keys {
  readonly tenant: string
  readonly otherTenant: string
  readonly admin: string
  readonly revoked: string
}

/** A value still to be resolved against the hints when the request is rendered. */
interface IdPick {
  readonly kind: 'id-pick'
  readonly field: string
  readonly index: number
}

/** A JSON value with picks and raw fragments in it; mutations edit this tree. */
type Tree = unknown

/** Raw body text spliced in where a marker string stands (deep nesting, invalid bytes). */
interface RawFragment {
  readonly kind: 'raw'
  readonly bytes: Buffer
}

export interface Draft {
  readonly route: RouteDoc
  method: string
  /** Path parameters as raw (already percent-encoded) segments, or picks. */
  pathParams: Record<string, string | IdPick>
  /** Query as ordered raw `name=value` pairs (already encoded), or a whole raw query string. */
  query: string[]
  headers: Record<string, string | string[]>
  /** The body value, or undefined for none. */
  body: Tree
  /** Replaces the serialised body entirely (encodings, scalars, empty). */
  rawBody: Buffer | undefined
  contentType: string | undefined
  auth: AuthKind
  readonly mutations: string[]
}

/** Stands for a raw fragment in the serialised body until the bytes are spliced in. */
const RAW_MARKER = 'hostile-raw-fragment:'

const isPick = (v: unknown): v is IdPick =>
  typeof v === 'object' && v !== null && (v as { kind?: unknown }).kind === 'id-pick'
const isRaw = (v: unknown): v is RawFragment =>
  typeof v === 'object' && v !== null && (v as { kind?: unknown }).kind === 'raw'

// ---------------------------------------------------------------------------------------------
// Valid-looking values from a schema

/**
 * Integers are drawn near their minimum: the only documented integers are wait bounds, and a
 * long wait on an attempt no worker runs would hold the sequential run for its whole bound.
 */
const INTEGER_SPREAD = 20

function stringOf(schema: JsonSchema, field: string, hints: Hints): fc.Arbitrary<unknown> {
  const min = schema.minLength ?? 0
  const max = schema.maxLength ?? 200
  let base: fc.Arbitrary<unknown>
  if (schema.format === 'uuid') base = fc.uuid()
  else if (schema.format === 'uri') base = fc.webUrl().filter((u) => u.length <= max)
  else if (schema.pattern !== undefined) {
    const pattern = new RegExp(schema.pattern)
    base = fc
      .stringMatching(pattern)
      .map((s) => s.slice(0, max))
      .filter((s) => s.length >= min && pattern.test(s))
  } else {
    base = fc.string({ unit: 'grapheme', minLength: min, maxLength: Math.min(max, min + 24) })
  }
  return withHints(base, field, hints)
}

function withHints(base: fc.Arbitrary<unknown>, field: string, hints: Hints) {
  const only = hints.only[field]
  if (only !== undefined) return fc.constantFrom(...only)
  const options: fc.WeightedArbitrary<unknown>[] = [{ arbitrary: base, weight: 1 }]
  if (hints.ids[field] !== undefined) {
    options.push({
      arbitrary: fc.nat().map((index): IdPick => ({ kind: 'id-pick', field, index })),
      weight: 4,
    })
  }
  const values = hints.values[field]
  if (values !== undefined && values.length > 0) {
    options.push({ arbitrary: fc.constantFrom(...values), weight: 4 })
  }
  return fc.oneof(...options)
}

export function valueOf(schema: JsonSchema, field: string, hints: Hints): fc.Arbitrary<unknown> {
  const value = plainValueOf(schema, field, hints)
  return schema.nullable === true
    ? fc.oneof({ arbitrary: value, weight: 4 }, fc.constant(null))
    : value
}

function plainValueOf(schema: JsonSchema, field: string, hints: Hints): fc.Arbitrary<unknown> {
  if (schema.anyOf !== undefined) {
    return withHints(fc.oneof(...schema.anyOf.map((s) => valueOf(s, field, hints))), field, hints)
  }
  if (schema.enum !== undefined) return fc.constantFrom(...schema.enum)
  if ('const' in schema) return fc.constant(schema.const)
  switch (schema.type) {
    case undefined: {
      const items = hints.itemSchemas[field]
      const any = fc.jsonValue({ maxDepth: 2 })
      return items === undefined
        ? any
        : fc.oneof({ arbitrary: valueOf(items, field, hints), weight: 5 }, any)
    }
    case 'object':
      return objectOf(schema, hints)
    case 'array': {
      const minLength = schema.minItems ?? 0
      const maxLength = Math.min(schema.maxItems ?? 4, minLength + 4)
      return fc.array(valueOf(schema.items ?? {}, field, hints), { minLength, maxLength })
    }
    case 'string':
      return stringOf(schema, field, hints)
    case 'integer':
    case 'number': {
      const min = schema.minimum ?? 0
      const max = Math.min(schema.maximum ?? min + INTEGER_SPREAD, min + INTEGER_SPREAD)
      return withHints(fc.integer({ min, max }), field, hints)
    }
    case 'boolean':
      return fc.boolean()
    case 'null':
      return fc.constant(null)
    default:
      throw new Error(`no generator for type "${schema.type}"`)
  }
}

function objectOf(schema: JsonSchema, hints: Hints): fc.Arbitrary<unknown> {
  const properties = schema.properties ?? {}
  const model: Record<string, fc.Arbitrary<unknown>> = {}
  for (const [name, s] of Object.entries(properties)) model[name] = valueOf(s, name, hints)
  const required = schema.required ?? []
  // Each optional property drawn can refuse the request on its own (an id of another namespace,
  // a name no subagent has), so bodies of many optional properties would rarely be accepted;
  // a quarter of the objects carry the required properties only.
  const known = fc.oneof(
    { arbitrary: fc.record(model, { requiredKeys: [...required] }), weight: 3 },
    {
      arbitrary: fc.record(
        Object.fromEntries(required.filter((name) => name in model).map((n) => [n, model[n]!])),
      ),
      weight: 1,
    },
  )
  const extra = schema.additionalProperties
  if (typeof extra !== 'object') return known
  const free = fc.dictionary(
    fc.string({ unit: 'grapheme', minLength: 1, maxLength: 12 }),
    valueOf(extra, '*', hints),
    { maxKeys: 3 },
  )
  return fc.tuple(known, free).map(([k, f]) => ({ ...f, ...(k as object) }))
}

// ---------------------------------------------------------------------------------------------
// The draft of a valid-looking request for a route

export function draftOf(route: RouteDoc, hints: Hints): fc.Arbitrary<Draft> {
  const path: Record<string, fc.Arbitrary<string | IdPick>> = {}
  const query: fc.Arbitrary<string[]>[] = []
  const headers: fc.Arbitrary<[string, string] | undefined>[] = []
  const encode = (v: unknown): string =>
    encodeURIComponent(typeof v === 'string' ? v : JSON.stringify(v))
  for (const p of route.params) {
    const value = valueOf(p.schema, p.name, hints)
    if (p.in === 'path') {
      path[p.name] = value.map((v) => (isPick(v) ? v : encode(v)))
    } else if (p.in === 'query') {
      const pair = value.map((v) => [`${encodeURIComponent(p.name)}=${encode(v)}`])
      query.push(p.required ? pair : fc.option(pair, { nil: [] as string[] }).map((x) => x))
    } else {
      const header = value.map((v): [string, string] => [
        p.name,
        typeof v === 'string' ? v : JSON.stringify(v),
      ])
      headers.push(p.required ? header : fc.option(header, { nil: undefined }))
    }
  }
  return fc
    .record({
      pathParams: fc.record(path),
      query: fc.tuple(...query).map((q) => q.flat()),
      headers: fc.tuple(...headers),
      body: route.body === undefined ? fc.constant(undefined) : valueOf(route.body, 'body', hints),
      // A tenant route is called with either namespace's key, so ids of the other namespace's
      // objects meet a key that must not open them.
      auth: route.admin
        ? fc.constant<AuthKind>('admin')
        : fc.constantFrom<AuthKind>('tenant', 'tenant', 'other-tenant'),
    })
    .map(({ pathParams, query: q, headers: h, body, auth }): Draft => ({
      route,
      method: route.method,
      pathParams,
      query: q,
      headers: Object.fromEntries(h.filter((x) => x !== undefined)),
      body,
      rawBody: undefined,
      contentType: route.body === undefined ? undefined : 'application/json',
      auth,
      mutations: [],
    }))
}

// ---------------------------------------------------------------------------------------------
// Hostile mutations

type Mutation = (draft: Draft) => void

/** Every position in a body tree: the root is `[]`. */
function positions(tree: Tree, at: (string | number)[] = []): (string | number)[][] {
  const here = [at]
  if (Array.isArray(tree)) return here.concat(...tree.map((v, i) => positions(v, [...at, i])))
  if (typeof tree === 'object' && tree !== null && !isPick(tree) && !isRaw(tree)) {
    return here.concat(...Object.entries(tree).map(([k, v]) => positions(v, [...at, k])))
  }
  return here
}

function getAt(tree: Tree, at: readonly (string | number)[]): unknown {
  return at.reduce<unknown>((node, key) => (node as Record<string, unknown>)[key], tree)
}

/** Replaces the value at `at` (the root when `at` is empty); returns the new tree. */
function setAt(tree: Tree, at: readonly (string | number)[], value: unknown): Tree {
  if (at.length === 0) return value
  const parent = getAt(tree, at.slice(0, -1)) as Record<string | number, unknown>
  const key = at[at.length - 1]!
  Object.defineProperty(parent, key, {
    value,
    enumerable: true,
    writable: true,
    configurable: true,
  })
  return tree
}

/** Applies `edit` to the body position picked by `pick` (positions where `where` holds). */
function atBodyPosition(
  pick: number,
  where: (value: unknown) => boolean,
  edit: (value: unknown, at: (string | number)[]) => unknown,
): Mutation {
  return (draft) => {
    if (draft.body === undefined) draft.body = {}
    const candidates = positions(draft.body).filter((at) => where(getAt(draft.body, at)))
    const at = candidates[pick % Math.max(1, candidates.length)]
    if (at === undefined) return
    draft.body = setAt(draft.body, at, edit(getAt(draft.body, at), at))
  }
}

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v) && !isPick(v) && !isRaw(v)
const isText = (v: unknown): v is string => typeof v === 'string'

/** A value of a few small nodes and no raw fragment. */
function isSmall(value: unknown): boolean {
  const all = positions(value)
  return (
    all.length < 50 &&
    all.every((at) => {
      const v = getAt(value, at)
      return !isRaw(v) && !(typeof v === 'string' && v.length > 1000)
    })
  )
}

const WRONG_TYPES: readonly unknown[] = [
  0,
  -1,
  1.5,
  -0,
  1e308,
  Number.MAX_SAFE_INTEGER + 2,
  true,
  false,
  null,
  '',
  'x',
  '0',
  'null',
  [],
  [1, 'a'],
  {},
  { type: 'text' },
]
const UNKNOWN_KEYS = ['extra', '__proto__', 'constructor', 'namespaceId', 'prompt ', 'NAME', '']
const BAD_TEXT = ['\u0000', '\ud800', '\udfff', '\udc00\ud800', 'a\u0000b', '\ud83d']
const ODD_TEXT = ['\ufffe', '\u202e', '\u{1f600}', 'é', '\r\n', ' ', '\t', 'ｘ', '\u00a0']
const CONTENT_TYPES = [
  'text/plain',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=x',
  'application/json; charset=utf-16',
  'application/json; charset=latin1',
  'application/json; charset=UTF-8',
  'APPLICATION/JSON',
  'application/json;;',
  'application/json, text/plain',
  'application/vnd.api+json',
  'application/jsonx',
  'application/json\tx',
  '*/*',
  'json',
]
const SCALAR_BODIES = [
  'null',
  '0',
  '-1',
  '"x"',
  '[]',
  '[{}]',
  'true',
  '{}',
  '""',
  '1e400',
  '{"a":1',
]
const INVALID_UTF8 = [
  [0xff],
  [0xc3],
  [0xed, 0xa0, 0x80],
  [0xc0, 0x80],
  [0xf4, 0x90, 0x80, 0x80],
  [0xfe, 0xff],
]
const BAD_IDS = [
  'x',
  '1',
  'null',
  'undefined',
  '..',
  '.',
  '%2e%2e',
  '%00',
  '%zz',
  '%',
  '%ED%A0%80',
  '%C0%80',
  '%2F',
  '%252F',
  '%E2%80%AE',
  '%F0%9F%98%80',
  '%EF%BC%90',
  '00000000-0000-0000-0000-00000000000g',
  '{00000000-0000-4000-8000-000000000000}',
  'urn:uuid:00000000-0000-4000-8000-000000000000',
  '00000000000040008000000000000000',
  '00000000-0000-4000-8000-000000000000%00',
  '00000000-0000-4000-8000-000000000000%20',
  'ffffffff-ffff-ffff-ffff-ffffffffffff',
  'ABCDEF01-2345-4678-89AB-CDEF01234567',
  '-1',
  '0x10',
]
const BAD_QUERY_VALUES = [
  '',
  '0x10',
  '1e3',
  '-1',
  '60001',
  '99999999999999999999',
  '%205',
  '5%20',
  '1.5',
  'Infinity',
  'NaN',
  '%2B5',
  '%EF%BC%90',
  '%zz',
  '%00',
  'true',
  '00000000000000000000000000000001',
]
const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'HEAD']
const AUTH_KINDS: readonly AuthKind[] = [
  'tenant',
  'other-tenant',
  'admin',
  'none',
  'basic',
  'bearer-empty',
  'unknown-key',
  'revoked-key',
  'key-with-junk',
  'long-key',
  'huge-key',
  'lowercase-scheme',
]

/** Nested arrays or objects `depth` deep, as raw JSON text (JSON.stringify would recurse). */
function deepJson(depth: number, objects: boolean): Buffer {
  return Buffer.from(
    objects
      ? '{"a":'.repeat(depth) + '1' + '}'.repeat(depth)
      : '['.repeat(depth) + ']'.repeat(depth),
  )
}

function named(label: string, mutation: Mutation): Mutation {
  return (draft) => {
    draft.mutations.push(label)
    mutation(draft)
  }
}

const mutations: fc.Arbitrary<Mutation>[] = [
  fc.tuple(fc.nat(), fc.constantFrom(...WRONG_TYPES)).map(([pick, value]) =>
    named(
      `wrong-type ${JSON.stringify(value)}`,
      atBodyPosition(
        pick,
        () => true,
        () => structuredClone(value),
      ),
    ),
  ),
  fc
    .tuple(fc.nat(), fc.constantFrom(...UNKNOWN_KEYS), fc.jsonValue({ maxDepth: 1 }))
    .map(([pick, key, value]) =>
      named(
        `unknown-field ${JSON.stringify(key)}`,
        atBodyPosition(pick, isObject, (obj) => {
          const copy = { ...(obj as object) }
          Object.defineProperty(copy, key, {
            value,
            enumerable: true,
            writable: true,
            configurable: true,
          })
          return copy
        }),
      ),
    ),
  fc.nat().map((pick) =>
    named(
      'missing-field',
      atBodyPosition(
        pick,
        (v) => isObject(v) && Object.keys(v).length > 0,
        (obj) => {
          const copy = { ...(obj as Record<string, unknown>) }
          const keys = Object.keys(copy)
          delete copy[keys[pick % keys.length]!]
          return copy
        },
      ),
    ),
  ),
  fc.tuple(fc.nat(), fc.constantFrom(65, 129, 257, 501, 100_001, 1_100_000)).map(([pick, length]) =>
    named(
      `huge-string ${length}`,
      atBodyPosition(pick, isText, () => 'x'.repeat(length)),
    ),
  ),
  fc.tuple(fc.nat(), fc.constantFrom(65, 1001, 10_001)).map(([pick, length]) =>
    named(
      `huge-array ${length}`,
      atBodyPosition(pick, Array.isArray, (arr) => {
        // Copies of a small first element; a huge one (another mutation's) would multiply.
        const first = (arr as unknown[])[0]
        const element = first !== undefined && isSmall(first) ? first : 'x'
        // Copies, not one shared element: a later mutation must change one of them, not all.
        return Array.from({ length }, () => cloneTree(element))
      }),
    ),
  ),
  fc
    .tuple(fc.nat(), fc.constantFrom(64, 1000, 10_000, 200_000), fc.boolean())
    .map(([pick, depth, objects]) =>
      named(
        `deep ${depth} ${objects ? 'objects' : 'arrays'}`,
        atBodyPosition(
          pick,
          () => true,
          (): RawFragment => ({ kind: 'raw', bytes: deepJson(depth, objects) }),
        ),
      ),
    ),
  fc
    .tuple(fc.nat(), fc.constantFrom(...BAD_TEXT, ...ODD_TEXT), fc.nat(), fc.boolean())
    .map(([pick, bad, offset, inKey]) =>
      named(
        `text ${JSON.stringify(bad)}${inKey ? ' in a key' : ''}`,
        inKey
          ? atBodyPosition(
              pick,
              (v) => isObject(v) && Object.keys(v).length > 0,
              (obj) => {
                const entries = Object.entries(obj as object)
                const i = offset % entries.length
                return Object.fromEntries(
                  entries.map(([k, v], j) => [j === i ? k.slice(0, 1) + bad + k.slice(1) : k, v]),
                )
              },
            )
          : atBodyPosition(pick, isText, (s) => {
              const text = s as string
              const at = offset % (text.length + 1)
              return text.slice(0, at) + bad + text.slice(at)
            }),
      ),
    ),
  fc.tuple(fc.nat(), fc.constantFrom(...INVALID_UTF8)).map(([pick, bytes]) =>
    named(
      `invalid-utf8 ${Buffer.from(bytes).toString('hex')}`,
      atBodyPosition(pick, isText, (s): RawFragment => ({
        kind: 'raw',
        bytes: Buffer.concat([
          Buffer.from(`"${(s as string).slice(0, 8)}`),
          Buffer.from(bytes),
          Buffer.from('"'),
        ]),
      })),
    ),
  ),
  fc.constantFrom(...CONTENT_TYPES, undefined).map((type) =>
    named(`content-type ${String(type)}`, (d) => {
      d.contentType = type
      if (d.body === undefined) d.body = {}
    }),
  ),
  fc.constantFrom('utf16le', 'utf16le-bom', 'utf8-bom', 'latin1').map((encoding) =>
    named(`encoding ${encoding}`, (d) => {
      const text = JSON.stringify(d.body ?? {}) ?? ''
      d.rawBody =
        encoding === 'utf16le'
          ? Buffer.from(text, 'utf16le')
          : encoding === 'utf16le-bom'
            ? Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(text, 'utf16le')])
            : encoding === 'utf8-bom'
              ? Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(text)])
              : Buffer.from(text, 'latin1')
      d.contentType ??= 'application/json'
    }),
  ),
  fc.constantFrom(...SCALAR_BODIES, '').map((raw) =>
    named(`body ${JSON.stringify(raw)}`, (d) => {
      d.rawBody = Buffer.from(raw)
      d.contentType ??= 'application/json'
    }),
  ),
  fc.constantFrom('truncate', 'trailing-comma', 'trailing-garbage', 'duplicate-key').map((how) =>
    named(`malformed ${how}`, (d) => {
      const text = JSON.stringify(d.body ?? {}) ?? '{}'
      d.rawBody = Buffer.from(
        how === 'truncate'
          ? text.slice(0, Math.floor(text.length / 2))
          : how === 'trailing-comma'
            ? text.replace(/}$/, ',}')
            : how === 'trailing-garbage'
              ? `${text}}}`
              : text.replace(/^\{/, '{"name":"scripted",'),
      )
      d.contentType ??= 'application/json'
    }),
  ),
  fc
    .tuple(
      fc.nat(),
      fc.oneof(
        fc.constantFrom(...BAD_IDS),
        fc
          .tuple(fc.integer({ min: 101, max: 400 }), fc.constantFrom('a', '0', '-', '%41'))
          .map(([n, c]) => c.repeat(n)),
      ),
    )
    .map(([pick, bad]) =>
      named(`bad-id ${bad.length > 40 ? `${bad.slice(0, 3)}×${bad.length}` : bad}`, (d) => {
        const names = Object.keys(d.pathParams)
        const name = names[pick % Math.max(1, names.length)]
        if (name !== undefined) d.pathParams[name] = bad
      }),
    ),
  fc
    .tuple(fc.constantFrom(...BAD_QUERY_VALUES), fc.nat(), fc.boolean())
    .map(([value, pick, extra]) =>
      named(`bad-query ${value}${extra ? ' +extra' : ''}`, (d) => {
        const names = d.route.params.filter((p) => p.in === 'query').map((p) => p.name)
        const name = names[pick % Math.max(1, names.length)] ?? 'timeoutMs'
        d.query = [...d.query.filter((q) => !q.startsWith(`${name}=`)), `${name}=${value}`]
        if (extra) d.query.push(pick % 2 === 0 ? `${name}=1` : 'unknown=1')
      }),
    ),
  fc.constantFrom(...AUTH_KINDS).map((auth) =>
    named(`auth ${auth}`, (d) => {
      d.auth = auth
    }),
  ),
  fc.constantFrom('', ' ', 'a b', 'x'.repeat(129), 'é', 'a/b', 'k\t', ['k-1', 'k-2']).map((key) =>
    named(`idempotency-key ${JSON.stringify(key).slice(0, 20)}`, (d) => {
      d.headers['idempotency-key'] = key
    }),
  ),
  fc.constantFrom(...METHODS).map((method) =>
    named(`method ${method}`, (d) => {
      d.method = method
    }),
  ),
]

/** A fully valid-looking request (about a quarter of cases), or one with 1–3 hostile mutations. */
export function hostileDraftOf(routes: readonly RouteDoc[], hints: Hints): fc.Arbitrary<Draft> {
  const drafts = routes.map((route) => draftOf(route, hints))
  return fc
    .tuple(
      fc.oneof(...drafts),
      fc.oneof(
        { arbitrary: fc.constant([]), weight: 1 },
        { arbitrary: fc.array(fc.oneof(...mutations), { minLength: 1, maxLength: 3 }), weight: 3 },
      ),
    )
    .map(([draft, applied]) => {
      // Drafts are shared by shrinking; mutate a deep copy.
      const copy: Draft = {
        ...draft,
        pathParams: { ...draft.pathParams },
        query: [...draft.query],
        headers: { ...draft.headers },
        body: cloneTree(draft.body),
        mutations: [],
      }
      for (const mutate of applied) mutate(copy)
      // fast-check prints a counterexample with this: bodies can be megabytes.
      Object.defineProperty(copy, fc.toStringMethod, {
        value: () =>
          `${copy.method} ${copy.route.path} (auth ${copy.auth}; ${copy.mutations.join('; ') || 'no mutation'})`,
      })
      return copy
    })
}

function cloneTree(tree: Tree): Tree {
  if (Array.isArray(tree)) return tree.map(cloneTree)
  if (isObject(tree)) {
    const copy: Record<string, unknown> = {}
    for (const [k, v] of Object.entries(tree)) {
      Object.defineProperty(copy, k, {
        value: cloneTree(v),
        enumerable: true,
        writable: true,
        configurable: true,
      })
    }
    return copy
  }
  return tree
}

// ---------------------------------------------------------------------------------------------
// Rendering a draft into bytes on the wire

export interface HostileRequest {
  readonly method: string
  readonly path: string
  readonly headers: Record<string, string | string[]>
  readonly body: Buffer | undefined
  readonly route: RouteDoc
  readonly auth: AuthKind
  /** Known ids in the path or at the top level of the body, with the namespace that owns them. */
  readonly refs: readonly KnownId[]
  readonly mutations: readonly string[]
}

export function render(draft: Draft, hints: Hints, keys: Keys): HostileRequest {
  const refs: KnownId[] = []
  const resolve = (pick: IdPick, top: boolean): string => {
    const pool = hints.ids[pick.field] ?? []
    const known = pool[pick.index % Math.max(1, pool.length)]
    if (known === undefined) return '00000000-0000-4000-8000-000000000000'
    if (top) refs.push(known)
    return known.id
  }
  const path =
    draft.route.path.replace(/\{([^}]+)\}/g, (_, name: string) => {
      const value = draft.pathParams[name] ?? ''
      return isPick(value) ? encodeURIComponent(resolve(value, true)) : value
    }) + (draft.query.length > 0 ? `?${draft.query.join('&')}` : '')

  let body = draft.rawBody
  if (body === undefined && draft.body !== undefined) {
    const raws: Buffer[] = []
    const text = JSON.stringify(draft.body, function (this: unknown, key, value: unknown) {
      if (isPick(value)) return resolve(value, this === draft.body)
      if (isRaw(value)) {
        raws.push(value.bytes)
        return `${RAW_MARKER}${raws.length - 1}`
      }
      return value
    })
    const parts = (text ?? '').split(new RegExp(`"${RAW_MARKER}(\\d+)"`))
    body = Buffer.concat(
      parts.map((part, i) => (i % 2 === 0 ? Buffer.from(part) : raws[Number(part)]!)),
    )
  }

  const headers: Record<string, string | string[]> = { ...draft.headers }
  const authorization = authorizationOf(draft.auth, keys)
  if (authorization !== undefined) headers.authorization = authorization
  if (draft.contentType !== undefined && body !== undefined)
    headers['content-type'] = draft.contentType
  return {
    method: draft.method,
    path,
    headers,
    body: draft.method === 'GET' || draft.method === 'HEAD' ? undefined : body,
    route: draft.route,
    auth: draft.auth,
    refs,
    mutations: draft.mutations,
  }
}

function authorizationOf(auth: AuthKind, keys: Keys): string | undefined {
  switch (auth) {
    case 'tenant':
      return `Bearer ${keys.tenant}`
    case 'other-tenant':
      return `Bearer ${keys.otherTenant}`
    case 'admin':
      return `Bearer ${keys.admin}`
    case 'none':
      return undefined
    case 'basic':
      return `Basic ${Buffer.from(`x:${keys.tenant}`).toString('base64')}`
    case 'bearer-empty':
      return 'Bearer '
    case 'unknown-key':
      return `Bearer ${keys.tenant.slice(0, -4)}AAAA`
    case 'revoked-key':
      return `Bearer ${keys.revoked}`
    case 'key-with-junk':
      return `Bearer ${keys.tenant} junk`
    case 'long-key':
      return `Bearer bk_${'a'.repeat(8_000)}`
    case 'huge-key':
      return `Bearer bk_${'a'.repeat(20_000)}`
    case 'lowercase-scheme':
      return `bearer ${keys.tenant}`
    default: {
      const unexpected: never = auth
      throw new Error(`unexpected auth ${String(unexpected)}`)
    }
  }
}

/** Whether `auth` is a key that opens `route` (the only auths under which a 2xx may come). */
export function opens(auth: AuthKind, route: RouteDoc): boolean {
  if (route.admin) return auth === 'admin'
  return auth === 'tenant' || auth === 'other-tenant' || auth === 'lowercase-scheme'
}

/** The namespace a tenant auth acts as. */
export function namespaceOf(auth: AuthKind): string | undefined {
  return auth === 'tenant' || auth === 'lowercase-scheme'
    ? 'default'
    : auth === 'other-tenant'
      ? 'other'
      : undefined
}
