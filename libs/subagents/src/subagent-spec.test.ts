import { describe, expect, it } from 'vitest'
import { parseSubagentMarkdown } from './subagent-spec.ts'

const debugger_ = `
---
name: debugger
description: Debug code issues
tools:
  - grep
  - view
optional_tools: edit, shell
denied_tools: [bash]
model: anthropic:claude-sonnet-4
inherit_hooks: true
inherit_capabilities: false
denied_capabilities: approval
color: red
---

You are a debugging expert.

`

function specError(text: string): { code?: string; message: string } {
  try {
    parseSubagentMarkdown(text)
  } catch (error) {
    return error as { code?: string; message: string }
  }
  throw new Error('expected INVALID_SPEC')
}

describe('parseSubagentMarkdown', () => {
  it('reads name, description, tools (list or comma string), model and the trimmed body as the system prompt', () => {
    const spec = parseSubagentMarkdown(debugger_)
    expect(spec).toMatchObject({
      name: 'debugger',
      description: 'Debug code issues',
      tools: ['grep', 'view'],
      optionalTools: ['edit', 'shell'],
      model: 'anthropic:claude-sonnet-4',
      systemPrompt: 'You are a debugging expert.',
    })
  })

  it('keeps denied_tools, inheritance settings and other frontmatter keys in metadata', () => {
    expect(parseSubagentMarkdown(debugger_).metadata).toEqual({
      denied_tools: ['bash'],
      inherit_hooks: true,
      inherit_capabilities: false,
      denied_capabilities: ['approval'],
      color: 'red',
    })
  })

  it('defaults absent tool lists to empty and omits an absent model', () => {
    const spec = parseSubagentMarkdown('---\nname: a\ndescription: b\ntools:\n---\nbody')
    expect(spec.tools).toEqual([])
    expect(spec.optionalTools).toEqual([])
    expect('model' in spec).toBe(false)
  })

  it('rejects a file without frontmatter with INVALID_SPEC saying how to add it', () => {
    const error = specError('You are a helper.')
    expect(error.code).toBe('INVALID_SPEC')
    expect(error.message).toContain('start the file with a `---` line')
  })

  it('rejects missing or malformed fields with INVALID_SPEC naming each field to fix', () => {
    const error = specError('---\ndescription: 3\ntools: 7\n---\n')
    expect(error.code).toBe('INVALID_SPEC')
    expect(error.message).toContain('`name` is required')
    expect(error.message).toContain('`tools` must be a list of names or a comma-separated string')
  })

  it('rejects frontmatter that is not valid YAML with INVALID_SPEC', () => {
    expect(specError('---\nname: [unclosed\n---\nbody').code).toBe('INVALID_SPEC')
    expect(specError('---\n- a\n- b\n---\nbody').code).toBe('INVALID_SPEC')
  })
})
