import { describe, expect, test } from 'vitest'
import { formatElapsed, parseDuration } from './duration.ts'

describe('parseDuration', () => {
  test('accepts milliseconds, seconds, minutes, hours and days, and fractions of them', () => {
    expect(parseDuration('500ms')).toBe(500)
    expect(parseDuration('30s')).toBe(30_000)
    expect(parseDuration('2m')).toBe(120_000)
    expect(parseDuration('1.5s')).toBe(1_500)
    expect(parseDuration('0s')).toBe(0)
    expect(parseDuration(' 10s ')).toBe(10_000)
    expect(parseDuration('12h')).toBe(43_200_000)
    expect(parseDuration('30d')).toBe(2_592_000_000)
    expect(parseDuration('1.5d')).toBe(129_600_000)
  })

  test('refuses a bare number, an unknown unit, a sign or no amount', () => {
    for (const text of [
      '10',
      '',
      's',
      '1w',
      '1y',
      '-1s',
      '+2s',
      '1 s',
      '1.s',
      '.5s',
      '1e3ms',
      'abc',
    ]) {
      expect(parseDuration(text), text).toBeUndefined()
    }
  })
})

describe('formatElapsed', () => {
  test('shows tenths of a second below a minute, truncated, never negative', () => {
    expect(formatElapsed(0)).toBe('0.0s')
    expect(formatElapsed(99)).toBe('0.0s')
    expect(formatElapsed(1_250)).toBe('1.2s')
    expect(formatElapsed(59_999)).toBe('59.9s')
    expect(formatElapsed(-5)).toBe('0.0s')
  })

  test('shows minutes and two-digit seconds from a minute on', () => {
    expect(formatElapsed(60_000)).toBe('1m00s')
    expect(formatElapsed(65_400)).toBe('1m05s')
    expect(formatElapsed(754_000)).toBe('12m34s')
  })
})
