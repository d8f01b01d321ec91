import { describe, expect, it } from 'vitest'
import { delegationToolNames } from './delegation-mode.ts'
import { delegationToolDefinitions } from './delegation-tools.ts'
import { createSubagentRegistry } from './subagent-registry.ts'

const configs = [{ name: 'research', run: () => Promise.resolve({ output: 'x' }) }]
const definedNames = (mode: 'blocking' | 'async' | 'disabled') =>
  delegationToolDefinitions(createSubagentRegistry(configs, { mode })).map((tool) => tool.name)

describe('delegation modes', () => {
  it('installs no delegation tools when delegation is disabled', () => {
    expect(definedNames('disabled')).toEqual([])
    expect(delegationToolNames('disabled')).toEqual([])
  })

  it('exposes the blocking delegate tool and subagent_info in blocking mode', () => {
    expect(definedNames('blocking')).toEqual(['delegate', 'subagent_info'])
  })

  it('exposes delegate, steer_subagent, cancel_subagent, wait_subagent and subagent_info in async mode', () => {
    const names = [
      'delegate',
      'steer_subagent',
      'cancel_subagent',
      'wait_subagent',
      'subagent_info',
    ]
    expect(definedNames('async')).toEqual(names)
    expect(delegationToolNames('async')).toEqual(names)
  })

  it('gives every async definition an object input schema', () => {
    for (const tool of delegationToolDefinitions(
      createSubagentRegistry(configs, { mode: 'async' }),
    )) {
      expect(tool.inputSchema).toMatchObject({ type: 'object' })
    }
  })
})
