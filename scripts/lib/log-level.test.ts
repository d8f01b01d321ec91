import { describe, expect, it } from 'vitest'
import { launchLogging } from './log-level.ts'

const line = (level: number): string => JSON.stringify({ level, msg: 'm' })

describe('launchLogging', () => {
  it('launches at info when a quieter level is asked for, and echoes only lines at that level or above', () => {
    const warn = launchLogging('warn')
    expect(warn.level).toBe('info')
    expect([30, 40, 50, 60].map((l) => warn.echoes(line(l)))).toEqual([false, true, true, true])
    const fatal = launchLogging('fatal')
    expect([50, 60].map((l) => fatal.echoes(line(l)))).toEqual([false, true])
  })

  it('echoes no pino line when silent, but still what is not one (a crash, a stack trace)', () => {
    const silent = launchLogging('silent')
    expect(silent.level).toBe('info')
    expect(silent.echoes(line(60))).toBe(false)
    expect(silent.echoes('node:internal/modules/run_main: Error: boom')).toBe(true)
    expect(silent.echoes('{not json')).toBe(true)
  })

  it('leaves info and more verbose levels, no level and unknown values as they are', () => {
    for (const requested of ['info', 'debug', 'trace', undefined, 'loud']) {
      const logging = launchLogging(requested)
      expect(logging.level).toBe(requested)
      expect(logging.echoes(line(10))).toBe(true)
    }
  })
})
