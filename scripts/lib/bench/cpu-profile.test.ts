import { describe, expect, test } from 'vitest'
import {
  burstStageFigures,
  CPU_PROFILE_DIR_VAR,
  profileEnv,
  summariseProfile,
  type CpuProfile,
} from './cpu-profile.ts'

describe('the growth bench profiling switch', () => {
  test('off unless its directory is given: the apps start with their environment unchanged', () => {
    expect(profileEnv({})).toEqual({})
    expect(profileEnv({ [CPU_PROFILE_DIR_VAR]: '', NODE_OPTIONS: '--x' })).toEqual({})
  })

  test('on: the apps write CPU profiles there, keeping the options they inherit', () => {
    expect(profileEnv({ [CPU_PROFILE_DIR_VAR]: '/tmp/p' })).toEqual({
      NODE_OPTIONS: '--cpu-prof --cpu-prof-dir=/tmp/p',
    })
    expect(
      profileEnv({ [CPU_PROFILE_DIR_VAR]: '/tmp/p', NODE_OPTIONS: '--max-old-space-size=512' }),
    ).toEqual({ NODE_OPTIONS: '--max-old-space-size=512 --cpu-prof --cpu-prof-dir=/tmp/p' })
  })
})

describe("a cancel burst's stages", () => {
  test('each stage is measured between its own two times; attempts missing one are left out', () => {
    const figures = burstStageFigures(
      [
        { id: 'a', requested: 1_100, ended: 1_300 },
        { id: 'b', requested: 1_050, ended: 1_060 },
        { id: 'c', requested: 9_000, ended: 9_000 },
        // Never sent by this burst: its times count in no stage.
        { id: 'd', requested: 5_000, ended: 5_000 },
      ],
      new Map([
        ['a', 1_000],
        ['b', 1_000],
        ['c', 8_980],
      ]),
      new Map([
        ['a', 1_700],
        ['b', 1_090],
        ['c', 9_500],
        ['d', 99_999],
      ]),
    )
    expect(figures).toEqual({
      sent_to_recorded_p50_ms: 50,
      sent_to_recorded_p99_ms: 100,
      recorded_to_terminal_p50_ms: 10,
      recorded_to_terminal_p99_ms: 200,
      terminal_to_answer_p50_ms: 400,
      terminal_to_answer_p99_ms: 500,
    })
  })
})

describe('a CPU profile summarised', () => {
  const frame = (id: number, functionName: string, children: number[] = []) => ({
    id,
    callFrame: {
      functionName,
      url: `file:///repo/libs/store/src/${functionName}.ts`,
      lineNumber: 0,
    },
    children,
  })
  // root → outer → inner, and an idle node; samples every 1 ms from t = 1,000 µs.
  const profile: CpuProfile = {
    nodes: [
      frame(1, '(root)', [2, 4]),
      frame(2, 'outer', [3]),
      frame(3, 'inner'),
      frame(4, '(idle)'),
    ],
    startTime: 0,
    endTime: 6_000,
    samples: [3, 3, 2, 4, 3, 3],
    timeDeltas: [1_000, 1_000, 1_000, 1_000, 1_000, 1_000],
  }

  test('self and inclusive time per function, idle apart, inside the window only', () => {
    const all = summariseProfile(profile)
    // The last sample has no end yet: it counts for nothing.
    expect(all).toMatchObject({ sampledMs: 5, idleMs: 1 })
    expect(all.self).toEqual([
      ['inner libs/store/src/inner.ts:1', 3],
      ['outer libs/store/src/outer.ts:1', 1],
    ])
    expect(all.inclusive).toEqual([
      ['(root) libs/store/src/(root).ts:1', 4],
      ['outer libs/store/src/outer.ts:1', 4],
      ['inner libs/store/src/inner.ts:1', 3],
    ])
    const window = summariseProfile(profile, { fromUs: 2_500, toUs: 4_500 })
    expect(window).toMatchObject({ sampledMs: 2, idleMs: 1 })
    expect(window.self).toEqual([['outer libs/store/src/outer.ts:1', 1]])
  })
})
