import { describe, expect, it } from 'vitest'
import {
  assertSupportedOutputSchema,
  createCaptureToolDefinition,
  createStructuredCapture,
  settleStructuredResult,
  validateAgainstOutputSchema,
} from './output-schema.ts'
import type { StructuredOutputSchema } from './types.ts'

const schema: StructuredOutputSchema = {
  type: 'object',
  description: 'A review',
  properties: {
    verdict: { enum: ['approve', 'reject'], description: 'The decision' },
    score: { type: 'integer' },
    ratio: { type: 'number' },
    summary: { type: 'string' },
    urgent: { type: 'boolean' },
    nothing: { type: 'null' },
    tags: { type: 'array', items: { type: 'string' } },
    author: {
      type: 'object',
      properties: { name: { type: 'string' } },
      required: ['name'],
      additionalProperties: false,
    },
  },
  required: ['verdict', 'score'],
  additionalProperties: false,
}
const output = [{ type: 'text', text: 'done' }] as const

describe('assertSupportedOutputSchema', () => {
  it('accepts the object-rooted subset: properties, required, additionalProperties, primitives, arrays, nested objects, enums, descriptions', () => {
    expect(() => assertSupportedOutputSchema(schema)).not.toThrow()
  })

  it.each([
    ['a non-object root', { type: 'array', items: { type: 'string' } }],
    ['a $ref', { type: 'object', properties: { a: { $ref: '#/defs/a' } } }],
    ['oneOf', { type: 'object', oneOf: [] }],
    ['anyOf in a property', { type: 'object', properties: { a: { anyOf: [{ type: 'string' }] } } }],
    ['allOf', { type: 'object', allOf: [] }],
    ['patternProperties', { type: 'object', patternProperties: { '^x': { type: 'string' } } }],
    [
      'a schema-valued additionalProperties',
      { type: 'object', additionalProperties: { type: 'string' } },
    ],
    ['an array without items', { type: 'object', properties: { a: { type: 'array' } } }],
    ['a type union', { type: 'object', properties: { a: { type: ['string', 'null'] } } }],
    ['an enum of objects', { type: 'object', properties: { a: { enum: [{}] } } }],
    [
      'a required name missing from properties',
      { type: 'object', properties: {}, required: ['a'] },
    ],
    ['string constraints', { type: 'object', properties: { a: { type: 'string', minLength: 1 } } }],
  ])('throws UNSUPPORTED_SCHEMA for %s', (_label, candidate) => {
    expect(() => assertSupportedOutputSchema(candidate)).toThrow(
      expect.objectContaining({ code: 'UNSUPPORTED_SCHEMA' }),
    )
  })
})

describe('validateAgainstOutputSchema', () => {
  it('accepts a value that satisfies the schema', () => {
    const value = {
      verdict: 'approve',
      score: 3,
      ratio: 0.5,
      summary: 's',
      urgent: false,
      nothing: null,
      tags: ['a'],
      author: { name: 'n' },
    }
    expect(validateAgainstOutputSchema(schema, value)).toEqual({ ok: true, value })
  })

  it('reports each violation with its path', () => {
    const verdict = validateAgainstOutputSchema(schema, {
      verdict: 'maybe',
      score: 1.5,
      tags: [1],
      author: {},
      extra: true,
    })
    expect(verdict.ok).toBe(false)
    expect(!verdict.ok && verdict.errors).toEqual([
      '#/verdict: must be one of ["approve","reject"]',
      '#/score: must be an integer',
      '#/tags/0: must be a string',
      '#/author: missing required property "name"',
      '#: unexpected property "extra"',
    ])
  })

  it('rejects values that are not plain JSON data', () => {
    expect(validateAgainstOutputSchema({ type: 'object' }, new Date()).ok).toBe(false)
    expect(
      validateAgainstOutputSchema(
        { type: 'object', properties: { n: { type: 'number' } } },
        { n: Infinity },
      ).ok,
    ).toBe(false)
  })
})

describe('structured capture', () => {
  it('builds the forced capture tool with the schema as its input', () => {
    expect(createCaptureToolDefinition(schema)).toMatchObject({
      name: 'submit_result',
      inputSchema: schema,
    })
  })

  it('includes structured only when the captured value satisfied the schema', () => {
    const capture = createStructuredCapture(schema)
    expect(capture.record({ verdict: 'nope', score: 1 })).toMatchObject({ accepted: false })
    expect(capture.settle({ output, stopReason: 'completed' })).toEqual({
      output,
      stopReason: 'error',
      failureCategory: 'structured_output_missing',
    })

    const value = { verdict: 'approve', score: 1 }
    expect(capture.record(value)).toEqual({ accepted: true })
    value.score = 99 // a later mutation by the child must not leak into the result
    expect(capture.settle({ output, stopReason: 'completed' })).toEqual({
      output,
      stopReason: 'completed',
      structured: { verdict: 'approve', score: 1 },
    })
  })

  it('ends the run with error when the captured value does not satisfy the schema', () => {
    expect(
      settleStructuredResult(
        schema,
        { output, stopReason: 'completed' },
        { value: { verdict: 'approve' } },
      ),
    ).toEqual({
      output,
      stopReason: 'error',
      failureCategory: 'structured_output_invalid',
    })
  })

  it('keeps a failed child’s own stop reason and omits structured', () => {
    const result = settleStructuredResult(
      schema,
      { output, stopReason: 'max-tokens' },
      { value: { verdict: 'approve', score: 1 } },
    )
    expect(result).toEqual({ output, stopReason: 'max-tokens' })
  })
})
