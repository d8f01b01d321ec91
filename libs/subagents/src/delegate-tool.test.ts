import { describe, expect, it } from 'vitest'
import { createAgentContext } from './agent-context.ts'
import { createDelegateTool, createSubagentInfoTool } from './delegate-tool.ts'
import { createSubagentRegistry } from './subagent-registry.ts'

const registry = createSubagentRegistry([
  {
    name: 'research',
    description: 'Collect facts',
    run: (task) => Promise.resolve({ output: `child: ${task.prompt}` }),
  },
])

describe('delegate tool', () => {
  it('delegates the validated { name, prompt } input and returns { name, output }', async () => {
    const tool = createDelegateTool(registry)
    const parent = createAgentContext()
    await expect(tool.call(parent, { name: 'research', prompt: 'collect facts' })).resolves.toEqual(
      { name: 'research', output: 'child: collect facts' },
    )
    expect(parent.lifecycle.records().map((record) => record.kind)).toEqual([
      'subagent_started',
      'subagent_completed',
    ])
  })

  it('rejects input that does not match its schema with INVALID_TOOL_INPUT before delegating', async () => {
    const tool = createDelegateTool(registry)
    const parent = createAgentContext()
    await expect(tool.call(parent, { name: 'research' })).rejects.toMatchObject({
      code: 'INVALID_TOOL_INPUT',
    })
    await expect(
      tool.call(parent, { name: 'research', prompt: 'p', extra: 1 }),
    ).rejects.toMatchObject({ code: 'INVALID_TOOL_INPUT' })
    expect(parent.lifecycle.records()).toEqual([])
  })

  it('publishes a JSON Schema definition derived from the zod input schema and names the subagents', () => {
    const { definition } = createDelegateTool(registry)
    expect(definition.name).toBe('delegate')
    expect(definition.description).toContain('research: Collect facts')
    expect(definition.inputSchema).toMatchObject({
      type: 'object',
      required: ['name', 'prompt'],
      additionalProperties: false,
    })
  })

  it('cannot be created for a registry whose delegation mode is disabled', () => {
    expect(() => createDelegateTool(createSubagentRegistry([], { mode: 'disabled' }))).toThrow(
      expect.objectContaining({ code: 'DELEGATION_DISABLED' }),
    )
  })

  it('answers subagent_info from the calling context’s tools', async () => {
    const info = createSubagentInfoTool(registry)
    await expect(
      info.call(
        createAgentContext({ tools: [{ name: 'task_list', metadata: { auto_inherit: true } }] }),
        {},
      ),
    ).resolves.toEqual([
      {
        name: 'research',
        description: 'Collect facts',
        available: true,
        inherited_tools: ['task_list'],
        diagnostics: [],
      },
    ])
  })
})
