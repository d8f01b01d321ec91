import { describe, expect, test } from 'vitest'
import { burstStageFigures, CPU_PROFILE_DIR_VAR, profileEnv } from './cpu-profile.ts'

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
