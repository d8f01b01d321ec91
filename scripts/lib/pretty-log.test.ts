import { describe, expect, it } from 'vitest'
import { prettyLogLine } from './pretty-log.ts'

describe('prettyLogLine', () => {
  it('renders a pino line as time, level, message and the fields that matter', () => {
    const line = JSON.stringify({
      level: 40,
      time: Date.UTC(2026, 11, 1, 12, 0, 1, 123),
      pid: 7,
      hostname: 'h',
      service: 'baton-worker',
      msg: 'subagent refused',
      subagent: 'writer',
      reason: 'needs write',
      attempts: 3,
    })
    expect(prettyLogLine(line)).toBe(
      '12:00:01.123 WARN  subagent refused subagent=writer reason="needs write" attempts=3',
    )
  })

  it('reads the ISO times Baton writes', () => {
    const line = JSON.stringify({
      level: 30,
      time: '2026-12-01T02:03:04.005Z',
      msg: 'api listening',
    })
    expect(prettyLogLine(line)).toBe('02:03:04.005 INFO  api listening')
    const odd = JSON.stringify({ level: 30, time: 'not a time', msg: 'api listening' })
    expect(prettyLogLine(odd)).toBe('INFO  api listening')
  })

  it("shows an error's type, message and first stack frame", () => {
    const line = JSON.stringify({
      level: 50,
      time: 0,
      msg: 'store call failed unexpectedly; ownership kept',
      err: {
        type: 'DatabaseError',
        message: 'boom',
        stack: 'DatabaseError: boom\n    at commit (x.ts:1:1)',
      },
    })
    expect(prettyLogLine(line)).toBe(
      '00:00:00.000 ERROR store call failed unexpectedly; ownership kept err="DatabaseError: boom at commit (x.ts:1:1)"',
    )
  })

  it('leaves anything that is not a pino line as it is', () => {
    for (const line of ['plain text', '{not json', '{"a":1}', '[1,2]'])
      expect(prettyLogLine(line)).toBe(line)
  })
})
