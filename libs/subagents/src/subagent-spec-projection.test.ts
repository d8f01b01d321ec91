import { describe, expect, it } from 'vitest'
import { parseSubagentMarkdown } from './subagent-spec.ts'
import { projectSubagentSpec } from './subagent-spec-projection.ts'

const tools = [{ name: 'grep' }, { name: 'view' }, { name: 'bash' }, { name: 'ask_user_question' }]

describe('projectSubagentSpec', () => {
  it('projects an agent spec, a tool policy from tools/optional_tools/denied_tools and a capability policy', () => {
    const spec = parseSubagentMarkdown(
      '---\nname: r\ndescription: d\ntools: grep\noptional_tools: view, shell\ndenied_tools: view\nmodel: m-1\ninherit_hooks: true\ndenied_capabilities: x\n---\nPrompt',
    )
    const { agentSpec, toolPolicy, capabilityPolicy } = projectSubagentSpec(spec)
    expect(agentSpec).toMatchObject({
      name: 'r',
      description: 'd',
      model: 'm-1',
      systemPrompt: 'Prompt',
    })
    expect(agentSpec.metadata['subagent_capability_policy']).toEqual({
      hooks: true,
      capability_bundles: false,
      denied_capabilities: ['x'],
    })
    const resolution = toolPolicy.resolve(tools)
    expect(resolution.ok && resolution.tools.map((tool) => tool.name)).toEqual(['grep'])
    expect({
      hooks: capabilityPolicy.hooks,
      bundles: capabilityPolicy.capabilityBundles,
      denied: capabilityPolicy.deniedCapabilities,
    }).toEqual({
      hooks: true,
      bundles: false,
      denied: ['x'],
    })
  })

  it('inherits all parent tools except denied and main-agent-only ones when the spec lists no tools', () => {
    const spec = parseSubagentMarkdown(
      '---\nname: r\ndescription: d\nmodel: m\ndenied_tools: bash\n---\n',
    )
    const resolution = projectSubagentSpec(spec).toolPolicy.resolve(tools)
    expect(resolution.ok && resolution.tools.map((tool) => tool.name)).toEqual(['grep', 'view'])
  })

  it('requires a concrete inherited model id when model is omitted or inherit', () => {
    const omitted = parseSubagentMarkdown('---\nname: r\ndescription: d\n---\n')
    const inherit = parseSubagentMarkdown('---\nname: r\ndescription: d\nmodel: inherit\n---\n')
    for (const spec of [omitted, inherit]) {
      expect(() => projectSubagentSpec(spec)).toThrow(
        expect.objectContaining({ code: 'INHERITED_MODEL_REQUIRED' }),
      )
      expect(() => projectSubagentSpec(spec, { inheritedModelId: ' ' })).toThrow(
        expect.objectContaining({ code: 'INHERITED_MODEL_REQUIRED' }),
      )
      expect(projectSubagentSpec(spec, { inheritedModelId: 'parent-model' }).agentSpec.model).toBe(
        'parent-model',
      )
    }
  })

  it('rejects programmatic specs with malformed policy metadata as INVALID_SPEC', () => {
    const spec = {
      name: 'r',
      description: 'd',
      tools: [],
      optionalTools: [],
      model: 'm',
      systemPrompt: '',
      metadata: { denied_tools: 'bash' },
    }
    expect(() => projectSubagentSpec(spec)).toThrow(
      expect.objectContaining({ code: 'INVALID_SPEC' }),
    )
  })
})
