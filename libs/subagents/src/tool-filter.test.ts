import { describe, expect, it } from 'vitest'
import { applyToolFilter } from './tool-filter.ts'

describe('applyToolFilter', () => {
  it('hides the denied tools and keeps the rest in order', () => {
    expect(applyToolFilter(['read', 'bash', 'grep'], { deny: ['bash'] })).toEqual(['read', 'grep'])
  })

  it('leaves every tool visible when there is no restriction', () => {
    expect(applyToolFilter(['read', 'bash'], undefined)).toEqual(['read', 'bash'])
  })

  it('throws UNKNOWN_TOOL when the restriction names a tool that does not exist', () => {
    expect(() => applyToolFilter(['read', 'bash'], { deny: ['bsah'] })).toThrow(
      expect.objectContaining({ code: 'UNKNOWN_TOOL', details: { unknown: ['bsah'] } }),
    )
  })
})
