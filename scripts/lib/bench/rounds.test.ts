import { describe, expect, it } from 'vitest'
import { median, summarizeRounds, type PhaseFigures, type RoundSystem } from './rounds.ts'

function phase(
  system: RoundSystem,
  round: number,
  perSecond: number,
  cpuMs: number,
  more: Partial<PhaseFigures> = {},
): PhaseFigures {
  return {
    system,
    round,
    perSecond,
    cpuMs,
    nodeCpuMs: cpuMs / 2,
    apiCpuMs: cpuMs / 4,
    redisCpuMs: 0.1,
    postgresCpuMs: cpuMs / 2 - 0.1,
    redisCommands: 35,
    machineBusy: 0.95,
    waitP50Ms: 4,
    waitP99Ms: 12,
    ...more,
  }
}

describe('median', () => {
  it('is the middle value of an odd count and the mean of the middle two of an even one', () => {
    expect(median([3, 1, 2])).toBe(2)
    expect(median([4, 1, 3, 2])).toBe(2.5)
    expect(median([7])).toBe(7)
    expect(median([])).toBeNaN()
  })
})

describe('summarizeRounds', () => {
  it('divides each round by the hand-rolled service of the same round, then takes the median', () => {
    // The machine doubled its speed in round 2: the medians of the ratios follow each round's
    // pair, which a ratio of the two systems' medians would not.
    const summaries = summarizeRounds([
      phase('naive', 1, 100, 2, { waitP50Ms: 4 }),
      phase('baton', 1, 150, 1, { waitP50Ms: 6 }),
      phase('naive', 2, 200, 1, { waitP50Ms: 2 }),
      phase('baton', 2, 220, 0.8, { waitP50Ms: 2.5 }),
      phase('naive', 3, 110, 1.8, { waitP50Ms: 5 }),
      phase('baton', 3, 176, 0.9, { waitP50Ms: 5.5 }),
    ])
    expect(summaries.map((s) => s.system)).toEqual(['naive', 'baton'])
    const baton = summaries[1]
    expect(baton).toMatchObject({ rounds: 3, perSecond: 176, cpuMs: 0.9 })
    expect(baton?.perSecondVsNaive).toEqual({ median: 1.5, min: 1.1, max: 1.6 })
    expect(baton?.cpuVsNaive).toEqual({ median: 0.5, min: 0.5, max: 0.8 })
    expect(baton?.waitP50VsNaive).toEqual({ median: 1.25, min: 1.1, max: 1.5 })
    expect(baton?.waitP50Ms).toBe(5.5)
    expect(summaries[0]?.perSecondVsNaive).toEqual({ median: 1, min: 1, max: 1 })
  })

  it('keeps the systems in round order and takes every figure as its own median', () => {
    const summaries = summarizeRounds([
      phase('baton', 1, 900, 1.2, { apiCpuMs: 0.3, redisCommands: 36, waitP99Ms: 20 }),
      phase('floor', 1, 3000, 0.4),
      phase('baton', 2, 1000, 1, { apiCpuMs: 0.2, redisCommands: 34, waitP99Ms: 10 }),
    ])
    expect(summaries.map((s) => s.system)).toEqual(['floor', 'baton'])
    expect(summaries[1]).toMatchObject({
      perSecond: 950,
      cpuMs: 1.1,
      nodeCpuMs: 0.55,
      apiCpuMs: 0.25,
      redisCommands: 35,
      waitP99Ms: 15,
    })
  })

  it('has no ratios without the hand-rolled service, and none for a round it missed', () => {
    const alone = summarizeRounds([phase('core', 1, 2000, 0.7)])
    expect(alone[0]?.perSecondVsNaive).toBeUndefined()
    expect(alone[0]?.cpuVsNaive).toBeUndefined()
    expect(alone[0]?.waitP50VsNaive).toBeUndefined()

    const partial = summarizeRounds([
      phase('naive', 1, 100, 2),
      phase('core', 1, 180, 1),
      phase('core', 2, 400, 0.5),
    ])
    expect(partial[1]?.perSecondVsNaive).toEqual({ median: 1.8, min: 1.8, max: 1.8 })
  })
})
