import { describe, expect, test } from 'vitest'
import { z } from 'zod'
import { jsonSerializerCompiler } from './openapi.ts'

describe('answers are serialised without their response schemas', () => {
  test('a field the schema does not name is kept, and a value is not transformed', () => {
    const schema = z.object({ at: z.iso.datetime(), n: z.number().transform(String) })
    const serialize = jsonSerializerCompiler({
      schema,
      method: 'GET',
      url: '/x',
      httpStatus: '200',
    })
    const answer = { at: 'not a time', n: 1, extra: { kept: true } }
    expect(JSON.parse(serialize(answer))).toEqual(answer)
  })
})
