import { describe, expect, it } from 'vitest'
import { parseSubagentMarkdown } from './subagent-spec.ts'
import { subagentTransport, transportSteerable } from './subagent-transport.ts'

const spec = (extra: string) =>
  parseSubagentMarkdown(`---\nname: helper\ndescription: Helps\n${extra}---\nBe helpful.\n`)

describe('subagent transport', () => {
  it('a spec without provider runs in-process and can be steered', () => {
    const t = subagentTransport(spec(''))
    expect(t).toEqual({ kind: 'spawn' })
    expect(transportSteerable(t)).toBe(true)
  })

  it('provider acp takes command and args (list or string) and cannot be steered', () => {
    const t = subagentTransport(
      spec('provider: acp\ncommand: /usr/bin/agent\nargs: [--stdio, --quiet]\n'),
    )
    expect(t).toEqual({ kind: 'acp', command: '/usr/bin/agent', args: ['--stdio', '--quiet'] })
    expect(transportSteerable(t)).toBe(false)
    expect(
      subagentTransport(spec('provider: acp\ncommand: agent\nargs: --stdio --quiet\n')),
    ).toMatchObject({
      args: ['--stdio', '--quiet'],
    })
  })

  it('an acp spec without command, or an unknown provider, is rejected with INVALID_SPEC', () => {
    expect(() => subagentTransport(spec('provider: acp\n'))).toThrow(/command/)
    expect(() => subagentTransport(spec('provider: carrier-pigeon\n'))).toThrow(
      expect.objectContaining({ code: 'INVALID_SPEC' }),
    )
  })
})
