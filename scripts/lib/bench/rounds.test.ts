import { describe, expect, it } from 'vitest'
import { summarizeRounds, type Figures, type RoundFigures } from './rounds.ts'
import type { SystemName } from './options.ts'

const run = (system: SystemName, round: number, figures: Figures): RoundFigures => ({
  system,
  round,
  figures,
})

describe('summarizeRounds', () => {
  it('divides Baton by each system of the same round, then takes the median of the ratios', () => {
    // The machine doubled its speed in round 2: the ratios follow each round's pair, which a
    // ratio of the two systems' medians (176 / 110 = 1.6) would not.
    const summary = summarizeRounds([
      run('naive', 1, { per_s: 100, cpu_ms_per_delegation: 2 }),
      run('baton', 1, { per_s: 150, cpu_ms_per_delegation: 1 }),
      run('naive', 2, { per_s: 200, cpu_ms_per_delegation: 1 }),
      run('baton', 2, { per_s: 220, cpu_ms_per_delegation: 0.8 }),
      run('naive', 3, { per_s: 110, cpu_ms_per_delegation: 1.8 }),
      run('baton', 3, { per_s: 176, cpu_ms_per_delegation: 0.9 }),
    ])
    expect(summary.rounds).toBe(3)
    expect(summary.medians.baton).toEqual({ per_s: 176, cpu_ms_per_delegation: 0.9 })
    expect(summary.medians.naive).toEqual({ per_s: 110, cpu_ms_per_delegation: 1.8 })
    expect(summary.ratios.baton_vs_naive).toEqual({
      per_s: { median: 1.5, min: 1.1, max: 1.6 },
      cpu_ms_per_delegation: { median: 0.5, min: 0.5, max: 0.8 },
    })
    expect(summary.ratios.baton_vs_raw).toBeUndefined()
  })

  it('pairs only rounds and figures both systems have, and never divides by zero', () => {
    const summary = summarizeRounds([
      run('raw', 1, { per_s: 8000, pg_cpu_ms_per_delegation: 0 }),
      run('baton', 1, { per_s: 1000, pg_cpu_ms_per_delegation: 0.3, cancel_p50_ms: 9 }),
      run('baton', 2, { per_s: 3000, pg_cpu_ms_per_delegation: 0.3, cancel_p50_ms: 11 }),
    ])
    expect(summary.ratios.baton_vs_raw).toEqual({ per_s: { median: 0.13, min: 0.13, max: 0.13 } })
    expect(summary.medians.baton).toEqual({
      per_s: 2000,
      pg_cpu_ms_per_delegation: 0.3,
      cancel_p50_ms: 10,
    })
  })

  it("adds Baton's audit counts up over the rounds, and divides nothing by them", () => {
    const summary = summarizeRounds([
      run('naive', 1, { per_s: 100 }),
      run('baton', 1, { per_s: 90, lost: 0, duplicates: 1 }),
      run('naive', 2, { per_s: 100 }),
      run('baton', 2, { per_s: 110, lost: 2, duplicates: 0 }),
    ])
    expect(summary.medians.baton).toEqual({ per_s: 100, lost: 2, duplicates: 1 })
    expect(Object.keys(summary.ratios.baton_vs_naive ?? {})).toEqual(['per_s'])
  })
})
