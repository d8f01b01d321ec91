import { describe, expect, it } from 'vitest'
import { median, percentile, spread } from './stats.ts'

describe('percentile', () => {
  it('takes the nearest rank below, and 0 of nothing', () => {
    const sorted = Array.from({ length: 100 }, (_, i) => i + 1)
    expect(percentile(sorted, 50)).toBe(51)
    expect(percentile(sorted, 99)).toBe(100)
    expect(percentile([3, 7], 99)).toBe(7)
    expect(percentile([], 50)).toBe(0)
  })
})

describe('median', () => {
  it('is the middle value of an odd count and the mean of the middle two of an even one', () => {
    expect(median([3, 1, 2])).toBe(2)
    expect(median([4, 1, 3, 2])).toBe(2.5)
    expect(median([7])).toBe(7)
    expect(median([])).toBeNaN()
  })
})

describe('spread', () => {
  it('gives the median, lowest and highest, rounded', () => {
    expect(spread([1.234, 0.5, 2], 2)).toEqual({ median: 1.23, min: 0.5, max: 2 })
  })
})
