import { describe, expect, test } from 'vitest'
import { byteRange } from './artifacts.routes.ts'

describe('byteRange', () => {
  test('one satisfiable range is served; anything else means the whole content', () => {
    expect(byteRange('bytes=0-9', 100)).toEqual({ start: 0, end: 9 })
    expect(byteRange('bytes=90-', 100)).toEqual({ start: 90, end: 99 })
    expect(byteRange('bytes=-10', 100)).toEqual({ start: 90, end: 99 })
    expect(byteRange('bytes=95-200', 100)).toEqual({ start: 95, end: 99 })
    expect(byteRange('bytes=-500', 100)).toEqual({ start: 0, end: 99 })
    for (const header of [
      undefined,
      'bytes=100-',
      'bytes=5-1',
      'bytes=-',
      'bytes=0-1,5-6',
      'items=0-1',
    ])
      expect(byteRange(header, 100)).toBeUndefined()
    expect(byteRange('bytes=0-', 0)).toBeUndefined()
  })
})
