import { describe, expect, it } from 'vitest'
import { createDelegateTool } from './delegate-tool.ts'
import { delegationToolNames } from './delegation-mode.ts'
import { asyncDelegateInputSchema, delegationToolDefinitions } from './delegation-tools.ts'
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

  it('gives the async delegate a strict input schema: name, prompt, agent_id and nothing else (no host metadata)', () => {
    const delegate = delegationToolDefinitions(
      createSubagentRegistry(configs, { mode: 'async' }),
    ).find((tool) => tool.name === 'delegate')
    expect(delegate?.inputSchema).toMatchObject({
      type: 'object',
      additionalProperties: false,
      required: ['name', 'prompt'],
    })
    expect(Object.keys(delegate?.inputSchema?.['properties'] ?? {})).toEqual([
      'name',
      'prompt',
      'agent_id',
    ])
    const input = { name: 'research', prompt: 'look' }
    expect(asyncDelegateInputSchema.safeParse(input).success).toBe(true)
    for (const extra of [
      { metadata: { host: 'x' } },
      { session_id: 's' },
      { parent_run_id: 'r' },
    ]) {
      expect(asyncDelegateInputSchema.safeParse({ ...input, ...extra }).success).toBe(false)
    }
  })

  it('never lists the blocking backend among the async definitions (definitions compared, not names)', () => {
    const blockingDelegate = createDelegateTool(createSubagentRegistry(configs)).definition
    const asyncDefinitions = delegationToolDefinitions(
      createSubagentRegistry(configs, { mode: 'async' }),
    )
    for (const definition of asyncDefinitions) {
      expect(definition).not.toEqual(blockingDelegate)
      expect(definition.inputSchema).not.toEqual(blockingDelegate.inputSchema)
    }
  })

  it('uses blocking delegation when no mode is given', () => {
    const registry = createSubagentRegistry(configs)
    expect(registry.mode).toBe('blocking')
    expect(delegationToolDefinitions(registry)).toEqual(
      delegationToolDefinitions(createSubagentRegistry(configs, { mode: 'blocking' })),
    )
  })
})
