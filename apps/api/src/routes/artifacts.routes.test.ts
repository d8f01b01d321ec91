import { describe, expect, test } from 'vitest'
import { byteRange } from './artifacts.routes.ts'

describe('byteRange', () => {
  test('one satisfiable range is served; one beyond the content is unsatisfiable; anything else means the whole content', () => {
    expect(byteRange('bytes=0-9', 100)).toEqual({ start: 0, end: 9 })
    expect(byteRange('bytes=90-', 100)).toEqual({ start: 90, end: 99 })
    expect(byteRange('bytes=-10', 100)).toEqual({ start: 90, end: 99 })
    expect(byteRange('bytes=95-200', 100)).toEqual({ start: 95, end: 99 })
    expect(byteRange('bytes=-500', 100)).toEqual({ start: 0, end: 99 })
    for (const header of [undefined, 'bytes=5-1', 'bytes=-', 'bytes=0-1,5-6', 'items=0-1'])
      expect(byteRange(header, 100)).toBeUndefined()
    for (const [header, length] of [
      ['bytes=100-', 100],
      ['bytes=100-200', 100],
      ['bytes=-0', 100],
      ['bytes=0-', 0],
      ['bytes=-5', 0],
    ] as const)
      expect(byteRange(header, length)).toBe('unsatisfiable')
  })
})
