import { describe, expect, test } from 'vitest'
import { parseBenchCommand, parseBenchOptions, parseScaleOptions } from './options.ts'

describe('the bench command line', () => {
  test('--scale picks the growth bench with its defaults; anything else the comparison', () => {
    const scale = parseBenchCommand(['--scale'])
    expect(scale).toMatchObject({
      kind: 'scale',
      options: {
        dimensions: ['concurrency', 'waits', 'history', 'retention'],
        levels: [1000, 5000, 10000],
        history: [0, 1_000_000, 10_000_000],
        retention: 1_000_000,
        workers: 2,
      },
    })
    expect(parseBenchCommand(['--rounds', '1']).kind).toBe('compare')
  })

  test('levels and history come ascending and once each; dimensions in their own order', () => {
    const options = parseScaleOptions([
      '--scale',
      '--levels',
      '5000,1000,5000',
      '--history',
      '1000000,0',
      '--dimensions',
      'history,concurrency',
      '--hold-ms',
      '3000',
    ])
    expect(options.levels).toEqual([1000, 5000])
    expect(options.history).toEqual([0, 1_000_000])
    expect(options.dimensions).toEqual(['concurrency', 'history'])
    expect(options.holdMs).toBe(3000)
  })

  test('a bad level, history size, dimension or option is refused with what to fix', () => {
    expect(() => parseScaleOptions(['--levels', '0'])).toThrow(/--levels takes whole numbers ≥ 1/)
    expect(() => parseScaleOptions(['--levels', '1000,'])).toThrow(/--levels/)
    expect(() => parseScaleOptions(['--history', '0,1.5'])).toThrow(
      /--history takes whole numbers ≥ 0/,
    )
    expect(() => parseScaleOptions(['--dimensions', 'speed'])).toThrow(/--dimensions takes/)
    expect(() => parseScaleOptions(['--retention', '0'])).toThrow(/--retention must be/)
    expect(() => parseBenchCommand(['--scale', '--rounds', '2'])).toThrow(/rounds/)
    expect(() => parseBenchCommand(['--levels', '10'])).toThrow(/levels/)
  })

  test('--hosted-turns sets the hosted turns Baton times, 100 unless given; a bad count is refused', () => {
    expect(parseBenchOptions([]).hostedTurns).toBe(100)
    expect(parseBenchOptions(['--hosted-turns', '7']).hostedTurns).toBe(7)
    expect(() => parseBenchOptions(['--hosted-turns', '0'])).toThrow(/--hosted-turns must be/)
  })
})
