import { describe, expect, it } from 'vitest'
import type { ToolDescriptor } from './tool-descriptor.ts'
import {
  createSubagentToolInheritancePolicy,
  type ToolInheritanceResolution,
} from './tool-inheritance-policy.ts'

const parentTools: ToolDescriptor[] = [
  { name: 'grep' },
  { name: 'view' },
  { name: 'edit' },
  { name: 'task_list', metadata: { auto_inherit: true } },
  { name: 'ask_user_question', metadata: { auto_inherit: true } },
]

function names(resolution: ToolInheritanceResolution): string[] {
  if (!resolution.ok) throw new Error(`expected ok, got ${JSON.stringify(resolution.diagnostics)}`)
  return resolution.tools.map((tool) => tool.name)
}

describe('SubagentToolInheritancePolicy', () => {
  it('makes the subagent unavailable when a required tool is missing from the parent', () => {
    const resolution = createSubagentToolInheritancePolicy({ required: ['grep', 'shell'] }).resolve(
      parentTools,
    )
    expect(resolution.ok).toBe(false)
    expect(resolution.diagnostics).toEqual([
      expect.objectContaining({ kind: 'missing_required_tool', tool_name: 'shell' }),
    ])
  })

  it('attaches optional tools when present and only notes the missing ones', () => {
    const resolution = createSubagentToolInheritancePolicy({
      required: ['grep'],
      optional: ['view', 'shell'],
    }).resolve(parentTools)
    expect(names(resolution)).toEqual(['grep', 'view', 'task_list'])
    expect(resolution.diagnostics).toEqual([
      expect.objectContaining({ kind: 'missing_optional_tool', tool_name: 'shell' }),
    ])
  })

  it('removes denied tools even when listed as optional or auto-inherited', () => {
    const resolution = createSubagentToolInheritancePolicy({
      optional: ['view'],
      denied: ['view', 'task_list'],
    }).resolve(parentTools)
    expect(names(resolution)).toEqual([])
  })

  it('inherits tools marked auto_inherit by default', () => {
    expect(
      names(createSubagentToolInheritancePolicy({ required: ['grep'] }).resolve(parentTools)),
    ).toEqual(['grep', 'task_list'])
    expect(names(createSubagentToolInheritancePolicy().resolve(parentTools))).toEqual(['task_list'])
  })

  it('never inherits main-agent-only ask_user_question through auto-inherit, inherit-all or an optional list', () => {
    expect(
      names(
        createSubagentToolInheritancePolicy({
          inheritAll: true,
          optional: ['ask_user_question'],
        }).resolve(parentTools),
      ),
    ).not.toContain('ask_user_question')
    expect(names(createSubagentToolInheritancePolicy().resolve(parentTools))).not.toContain(
      'ask_user_question',
    )
  })

  it('makes the subagent unavailable with a denied-required-tool diagnostic when ask_user_question is required', () => {
    const resolution = createSubagentToolInheritancePolicy({
      required: ['ask_user_question'],
    }).resolve(parentTools)
    expect(resolution).toEqual({
      ok: false,
      diagnostics: [
        expect.objectContaining({ kind: 'denied_required_tool', tool_name: 'ask_user_question' }),
      ],
    })
  })

  it('makes the subagent unavailable when a required tool is explicitly denied', () => {
    const resolution = createSubagentToolInheritancePolicy({
      required: ['grep'],
      denied: ['grep'],
    }).resolve(parentTools)
    expect(resolution.ok).toBe(false)
    expect(resolution.diagnostics[0]).toMatchObject({
      kind: 'denied_required_tool',
      tool_name: 'grep',
    })
  })

  it('inherits every parent tool except denied and main-agent-only ones when inheriting all', () => {
    const resolution = createSubagentToolInheritancePolicy({
      inheritAll: true,
      denied: ['edit'],
    }).resolve(parentTools)
    expect(names(resolution)).toEqual(['grep', 'view', 'task_list'])
  })

  it('returns the parent tool descriptors themselves, in parent order', () => {
    const resolution = createSubagentToolInheritancePolicy({ required: ['view', 'grep'] }).resolve(
      parentTools,
    )
    expect(resolution.ok && resolution.tools[0]).toBe(parentTools[0])
  })
})
