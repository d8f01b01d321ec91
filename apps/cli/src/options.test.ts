import { InvalidArgumentError } from 'commander'
import { describe, expect, test } from 'vitest'
import { parseGeneration, parseLease } from './options.ts'

describe('option parsers', () => {
  test('a lease is a duration from 1s to 10m', () => {
    expect(parseLease('1s')).toBe(1_000)
    expect(parseLease('90s')).toBe(90_000)
    expect(parseLease('10m')).toBe(600_000)
    for (const bad of ['999ms', '10.5m', '11m', '60', 'soon']) {
      expect(() => parseLease(bad), bad).toThrow(InvalidArgumentError)
    }
  })

  test('a generation is a whole number from 1', () => {
    expect(parseGeneration('1')).toBe(1)
    expect(parseGeneration('42')).toBe(42)
    for (const bad of ['0', '-1', '1.5', '01', '', 'x', '1e3']) {
      expect(() => parseGeneration(bad), bad).toThrow(InvalidArgumentError)
    }
  })
})
