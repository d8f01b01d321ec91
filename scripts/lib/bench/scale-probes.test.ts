import { describe, expect, test } from 'vitest'
import { histogramDelta, lowestBound, quantileBound, readHistogram } from './scale-probes.ts'

const exposition = (counts: readonly number[], sum: number) =>
  [
    '# HELP x_seconds x',
    '# TYPE x_seconds histogram',
    `x_seconds_bucket{le="0.01"} ${counts[0]}`,
    `x_seconds_bucket{le="0.1"} ${counts[1]}`,
    `x_seconds_bucket{le="+Inf"} ${counts[2]}`,
    `x_seconds_sum ${sum}`,
    `x_seconds_count ${counts[2]}`,
    'x_seconds_other 3',
  ].join('\n')

describe('histograms read from a metrics exposition', () => {
  test('a delta over two processes, its quantile bound and its lowest bucket', () => {
    const a = {
      before: readHistogram(exposition([1, 1, 1], 0.005), 'x_seconds'),
      after: readHistogram(exposition([1, 3, 3], 0.1), 'x_seconds'),
    }
    const b = {
      before: readHistogram('', 'x_seconds'),
      after: readHistogram(exposition([0, 0, 2], 3), 'x_seconds'),
    }
    const delta = histogramDelta([a, b])
    expect(delta.count).toBe(4)
    expect(delta.sum).toBeCloseTo(3.095)
    expect(quantileBound(delta, 0.5)).toBe(0.1)
    expect(quantileBound(delta, 0.99)).toBe(Infinity)
    expect(lowestBound(delta)).toBe(0.1)
    expect(quantileBound(histogramDelta([]), 0.5)).toBeUndefined()
  })
})
