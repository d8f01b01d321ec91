import { describe, expect, test } from 'vitest'
import { parseBenchOptions } from './options.ts'
import { benchRecord, summaryTable } from './report.ts'
import { summarizeRounds, type RoundFigures } from './rounds.ts'

const baton = (round: number, p50: number, p99: number): RoundFigures => ({
  system: 'baton',
  round,
  figures: { per_s: 100, hosted_turn_p50_ms: p50, hosted_turn_p99_ms: p99, hosted_turns: 10 },
})

describe('the bench report', () => {
  test("Baton's hosted turns get their own key: the medians of p50 and p99, the turns of all rounds", () => {
    const runs = [baton(1, 40, 90), baton(2, 50, 120), baton(3, 60, 100)]
    const options = parseBenchOptions(['--systems', 'baton', '--hosted-turns', '10'])
    const record = benchRecord(options, summarizeRounds(runs), runs)
    expect(record.hosted).toEqual({ turn_p50_ms: 50, turn_p99_ms: 100, turns: 30 })
    expect(record.options).toMatchObject({ hostedTurns: 10 })
    expect(summaryTable(options, summarizeRounds(runs)).join('\n')).toMatch(
      /hosted turn p50 \(ms\) +\| +50 \|/,
    )
  })

  test('without Baton there is no hosted key', () => {
    const runs: RoundFigures[] = [{ system: 'naive', round: 1, figures: { per_s: 100 } }]
    const record = benchRecord(
      parseBenchOptions(['--systems', 'naive']),
      summarizeRounds(runs),
      runs,
    )
    expect(record).not.toHaveProperty('hosted')
  })
})
