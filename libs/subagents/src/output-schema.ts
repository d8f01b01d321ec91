import { FailureCategory } from '@baton/contracts'
import { SubagentError } from './errors.ts'
import type { ToolDescriptor } from './tool-descriptor.ts'
import type {
  ContentBlock,
  StructuredOutputSchema,
  SubagentResult,
  SubagentStopReason,
} from './types.ts'

/**
 * Structured output is restricted to a small, object-rooted JSON Schema subset that every backend
 * can honour identically (in-process via a forced capture tool, remote via the same schema on the
 * wire). Anything outside it is rejected at start rather than partially enforced:
 *
 *   root      { type: 'object', properties?, required?, additionalProperties?: boolean, description? }
 *   property  { type: 'string' | 'number' | 'integer' | 'boolean' | 'null', description? }
 *             { type: 'array', items: property, description? }
 *             { type: 'object', ...as root }
 *             { enum: [string | number | boolean | null, ...], type?: primitive, description? }
 */
export function assertSupportedOutputSchema(
  schema: unknown,
): asserts schema is StructuredOutputSchema {
  if (!isPlainObject(schema) || schema['type'] !== 'object') {
    throw unsupported('#', 'the root must be a JSON object schema with type "object"')
  }
  checkObjectNode(schema, '#')
}

const PRIMITIVE_TYPES = new Set(['string', 'number', 'integer', 'boolean', 'null'])
const OBJECT_KEYS = new Set([
  'type',
  'properties',
  'required',
  'additionalProperties',
  'description',
])
const ARRAY_KEYS = new Set(['type', 'items', 'description'])
const PRIMITIVE_KEYS = new Set(['type', 'description'])
const ENUM_KEYS = new Set(['type', 'enum', 'description'])

function checkNode(node: unknown, path: string): void {
  if (!isPlainObject(node)) throw unsupported(path, 'a property schema must be an object')
  if ('enum' in node) return checkEnumNode(node, path)
  const type = node['type']
  if (type === 'object') return checkObjectNode(node, path)
  if (type === 'array') {
    checkKeys(node, ARRAY_KEYS, path)
    if (!('items' in node)) throw unsupported(path, 'an array schema must declare "items"')
    return checkNode(node['items'], `${path}/items`)
  }
  if (typeof type === 'string' && PRIMITIVE_TYPES.has(type)) {
    checkKeys(node, PRIMITIVE_KEYS, path)
    return checkDescription(node, path)
  }
  throw unsupported(
    path,
    `"type" must be one of object, array, string, number, integer, boolean, null (got ${JSON.stringify(type)})`,
  )
}

function checkObjectNode(node: Readonly<Record<string, unknown>>, path: string): void {
  checkKeys(node, OBJECT_KEYS, path)
  checkDescription(node, path)
  const properties = node['properties'] ?? {}
  if (!isPlainObject(properties))
    throw unsupported(`${path}/properties`, '"properties" must be an object')
  for (const [key, child] of Object.entries(properties))
    checkNode(child, `${path}/properties/${key}`)
  if ('required' in node) {
    const required = node['required']
    if (!Array.isArray(required) || !required.every((name) => typeof name === 'string')) {
      throw unsupported(`${path}/required`, '"required" must be an array of property names')
    }
    for (const name of required) {
      if (!Object.hasOwn(properties, name))
        throw unsupported(
          `${path}/required`,
          `required property "${name}" is not declared in "properties"`,
        )
    }
  }
  if ('additionalProperties' in node && typeof node['additionalProperties'] !== 'boolean') {
    throw unsupported(
      `${path}/additionalProperties`,
      '"additionalProperties" must be a boolean (schemas are not supported)',
    )
  }
}

function checkEnumNode(node: Readonly<Record<string, unknown>>, path: string): void {
  checkKeys(node, ENUM_KEYS, path)
  checkDescription(node, path)
  const values = node['enum']
  if (!Array.isArray(values) || values.length === 0)
    throw unsupported(`${path}/enum`, '"enum" must be a non-empty array')
  for (const value of values as unknown[]) {
    if (!isPrimitive(value))
      throw unsupported(`${path}/enum`, 'enum members must be strings, numbers, booleans or null')
  }
  if ('type' in node) {
    const type = node['type']
    if (typeof type !== 'string' || !PRIMITIVE_TYPES.has(type))
      throw unsupported(path, 'an enum "type" must be a primitive type')
    for (const value of values as unknown[]) {
      if (!matchesPrimitiveType(type, value))
        throw unsupported(
          `${path}/enum`,
          `enum member ${JSON.stringify(value)} is not of type ${type}`,
        )
    }
  }
}

function checkKeys(
  node: Readonly<Record<string, unknown>>,
  allowed: ReadonlySet<string>,
  path: string,
): void {
  for (const key of Object.keys(node)) {
    if (!allowed.has(key))
      throw unsupported(
        path,
        `keyword "${key}" is not supported here (allowed: ${[...allowed].join(', ')})`,
      )
  }
}

function checkDescription(node: Readonly<Record<string, unknown>>, path: string): void {
  if ('description' in node && typeof node['description'] !== 'string')
    throw unsupported(`${path}/description`, '"description" must be a string')
}

function unsupported(path: string, reason: string): SubagentError {
  return new SubagentError(
    'UNSUPPORTED_SCHEMA',
    `Unsupported output schema at ${path}: ${reason}.`,
    { details: { path } },
  )
}

export type OutputValidation =
  | { readonly ok: true; readonly value: unknown }
  | { readonly ok: false; readonly errors: readonly string[] }

/**
 * Validate a value against a supported schema. The value must be plain JSON data: plain objects,
 * arrays, finite numbers, strings, booleans, null. `additionalProperties` follows JSON Schema's
 * default (allowed unless `false`). Throws UNSUPPORTED_SCHEMA if the schema itself is unsupported.
 */
export function validateAgainstOutputSchema(
  schema: StructuredOutputSchema,
  value: unknown,
): OutputValidation {
  assertSupportedOutputSchema(schema)
  const errors: string[] = []
  validateNode(schema, value, '#', errors)
  return errors.length === 0 ? { ok: true, value } : { ok: false, errors }
}

function validateNode(
  node: Readonly<Record<string, unknown>>,
  value: unknown,
  path: string,
  errors: string[],
): void {
  if ('enum' in node) {
    if (!(node['enum'] as unknown[]).some((member) => member === value))
      errors.push(`${path}: must be one of ${JSON.stringify(node['enum'])}`)
    return
  }
  const type = node['type'] as string
  switch (type) {
    case 'object': {
      if (!isPlainObject(value)) {
        errors.push(`${path}: must be an object`)
        return
      }
      const properties = (node['properties'] ?? {}) as Readonly<
        Record<string, Readonly<Record<string, unknown>>>
      >
      for (const name of (node['required'] ?? []) as string[]) {
        if (!Object.hasOwn(value, name)) errors.push(`${path}: missing required property "${name}"`)
      }
      for (const [key, child] of Object.entries(value)) {
        const childSchema = Object.hasOwn(properties, key) ? properties[key] : undefined
        if (childSchema !== undefined) validateNode(childSchema, child, `${path}/${key}`, errors)
        else if (node['additionalProperties'] === false)
          errors.push(`${path}: unexpected property "${key}"`)
        else if (!isJson(child)) errors.push(`${path}/${key}: must be plain JSON data`)
      }
      return
    }
    case 'array': {
      if (!Array.isArray(value)) {
        errors.push(`${path}: must be an array`)
        return
      }
      const items = node['items'] as Readonly<Record<string, unknown>>
      value.forEach((item: unknown, index) => validateNode(items, item, `${path}/${index}`, errors))
      return
    }
    default:
      if (!matchesPrimitiveType(type, value))
        errors.push(`${path}: must be ${type === 'integer' ? 'an integer' : `a ${type}`}`)
  }
}

function matchesPrimitiveType(type: string, value: unknown): boolean {
  switch (type) {
    case 'string':
      return typeof value === 'string'
    case 'number':
      return typeof value === 'number' && Number.isFinite(value)
    case 'integer':
      return typeof value === 'number' && Number.isSafeInteger(value)
    case 'boolean':
      return typeof value === 'boolean'
    case 'null':
      return value === null
    default:
      return false
  }
}

function isPrimitive(value: unknown): boolean {
  return (
    value === null ||
    typeof value === 'string' ||
    typeof value === 'boolean' ||
    (typeof value === 'number' && Number.isFinite(value))
  )
}

function isJson(value: unknown): boolean {
  if (isPrimitive(value)) return true
  if (Array.isArray(value)) return value.every(isJson)
  return isPlainObject(value) && Object.values(value).every(isJson)
}

function isPlainObject(value: unknown): value is Readonly<Record<string, unknown>> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false
  const proto: unknown = Object.getPrototypeOf(value)
  return proto === Object.prototype || proto === null
}

/** Name of the forced tool through which an in-process child hands back its structured result. */
export const CAPTURE_TOOL_NAME = 'submit_result'

/**
 * The forced "capture" tool an in-process provider installs on a child when `outputSchema` is
 * requested: the child finishes by calling it, and its input IS the structured result, so the
 * model's own tool-calling machinery enforces the shape rather than free-text JSON parsing.
 */
export function createCaptureToolDefinition(
  schema: StructuredOutputSchema,
  name: string = CAPTURE_TOOL_NAME,
): ToolDescriptor {
  assertSupportedOutputSchema(schema)
  return {
    name,
    description:
      'Submit your final result. Call this exactly once when the task is done; its input is your answer and must match the schema.',
    inputSchema: schema,
  }
}

export type CaptureAttempt =
  { readonly accepted: true } | { readonly accepted: false; readonly errors: readonly string[] }

/** What the child finished with, before structured output is folded in. */
export interface ChildTurnOutcome {
  readonly output: readonly ContentBlock[]
  readonly stopReason: SubagentStopReason
}

/** Per-run capture state for the forced tool. */
export interface StructuredCapture {
  readonly tool: ToolDescriptor
  /** Handle one call of the capture tool; invalid input is reported back so the child can retry. */
  record(input: unknown): CaptureAttempt
  /** Fold the capture into the terminal result (see `settleStructuredResult`). */
  settle(child: ChildTurnOutcome): SubagentResult
}

export function createStructuredCapture(
  schema: StructuredOutputSchema,
  toolName: string = CAPTURE_TOOL_NAME,
): StructuredCapture {
  const tool = createCaptureToolDefinition(schema, toolName)
  let captured: { readonly value: unknown } | undefined
  return {
    tool,
    record(input) {
      const verdict = validateAgainstOutputSchema(schema, input)
      if (!verdict.ok) return { accepted: false, errors: verdict.errors }
      // Snapshot: the child's runtime must not be able to mutate the result after capture.
      captured = { value: structuredClone(input) }
      return { accepted: true }
    },
    settle(child) {
      return settleStructuredResult(schema, child, captured)
    },
  }
}

/**
 * The structured-output rule: `structured` is present only when the child completed AND its
 * captured value satisfies the schema. A completed child with no capture, or an invalid one, ends
 * `error` with a safe failure category — never `completed` without the structure the caller asked
 * for. A child that already failed keeps its own stop reason.
 */
export function settleStructuredResult(
  schema: StructuredOutputSchema,
  child: ChildTurnOutcome,
  capture: { readonly value: unknown } | undefined,
): SubagentResult {
  if (child.stopReason !== 'completed')
    return { output: child.output, stopReason: child.stopReason }
  if (capture === undefined) {
    return {
      output: child.output,
      stopReason: 'error',
      failureCategory: FailureCategory.StructuredOutputMissing,
    }
  }
  const verdict = validateAgainstOutputSchema(schema, capture.value)
  if (!verdict.ok)
    return {
      output: child.output,
      stopReason: 'error',
      failureCategory: FailureCategory.StructuredOutputInvalid,
    }
  return { output: child.output, stopReason: 'completed', structured: capture.value }
}
