import { describe, expect, it } from 'vitest'
import { interpolatePersona } from './persona.ts'

describe('interpolatePersona', () => {
  it('replaces every {{var}} placeholder with its registered value', () => {
    expect(
      interpolatePersona('You are {{role}} for {{ team }}; {{role}} again.', {
        role: 'a reviewer',
        team: 'infra',
      }),
    ).toBe('You are a reviewer for infra; a reviewer again.')
  })

  it('throws UNKNOWN_PERSONA_VARIABLE for a placeholder with no registered variable', () => {
    expect(() => interpolatePersona('Hello {{name}} from {{place}}', { name: 'x' })).toThrow(
      expect.objectContaining({
        code: 'UNKNOWN_PERSONA_VARIABLE',
        details: { unknown: ['place'] },
      }),
    )
  })

  it('does not resolve placeholders through the object prototype', () => {
    expect(() => interpolatePersona('{{constructor}}', {})).toThrow(
      expect.objectContaining({ code: 'UNKNOWN_PERSONA_VARIABLE' }),
    )
  })

  it('leaves text without placeholders untouched', () => {
    expect(interpolatePersona('Plain { braces } stay.', {})).toBe('Plain { braces } stay.')
  })
})
