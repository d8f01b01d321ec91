import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import {
  createSubagentCatalog,
  loadSubagentCatalog,
  type SubagentCatalogLogger,
} from './subagent-catalog.ts'
import { parseSubagentMarkdown, type SubagentSpec } from './subagent-spec.ts'

function spec(name: string, frontmatter = '', body = `You are ${name}.`): SubagentSpec {
  return parseSubagentMarkdown(
    `---\nname: ${name}\ndescription: ${name} agent\n${frontmatter}---\n${body}\n`,
  )
}

const researcher = spec('researcher', 'tools: [view]\noptional_tools: grep\nmodel: scripted:r\n')
const external = spec('external', 'provider: acp\ncommand: /bin/agent\nargs: [--stdio]\n')
const writer = spec('writer', 'tools: [view, write]\n')
const asker = spec('asker', 'tools: [ask_user_question]\n')
const selfDenied = spec('self-denied', 'tools: [view]\ndenied_tools: [view]\n')

function recordingLogger() {
  const lines: { level: 'info' | 'warn'; fields: Record<string, unknown>; message: string }[] = []
  const logger: SubagentCatalogLogger = {
    info: (fields, message) => lines.push({ level: 'info', fields, message }),
    warn: (fields, message) => lines.push({ level: 'warn', fields, message }),
  }
  return { logger, lines }
}

describe('subagent catalog', () => {
  it('makes a spawn spec runnable and steerable, with its model, persona and the offered tools it does not take denied', () => {
    const catalog = createSubagentCatalog([researcher], { defaultModel: 'scripted:default' })
    expect(catalog.admit('researcher')).toEqual({ kind: 'runnable', steerable: true })
    expect(catalog.runnable.get('researcher')).toEqual({
      name: 'researcher',
      launch: { kind: 'spawn' },
      steerable: true,
      agentOptions: { model: 'scripted:r' },
      persona: 'You are researcher.',
      toolFilter: { deny: ['list'] },
      diagnostics: [],
    })
  })

  it('gives a spec that inherits its model the caller default, or no model when there is none', () => {
    const inheriting = spec('inheriting')
    expect(
      createSubagentCatalog([inheriting], { defaultModel: 'scripted:default' }).runnable.get(
        'inheriting',
      )?.agentOptions,
    ).toEqual({ model: 'scripted:default' })
    const withoutDefault = createSubagentCatalog([inheriting]).runnable.get('inheriting')
    expect(withoutDefault).toBeDefined()
    expect(withoutDefault?.agentOptions).toBeUndefined()
  })

  it('makes an ACP spec runnable but not steerable, launched with its command', () => {
    const catalog = createSubagentCatalog([external])
    expect(catalog.admit('external')).toEqual({ kind: 'runnable', steerable: false })
    expect(catalog.runnable.get('external')?.launch).toEqual({
      kind: 'acp',
      command: '/bin/agent',
      args: ['--stdio'],
    })
  })

  it('always holds the built-in scripted subagent, steerable', () => {
    const catalog = createSubagentCatalog([])
    expect(catalog.admit('scripted')).toEqual({ kind: 'runnable', steerable: true })
    expect(catalog.runnable.get('scripted')?.launch).toEqual({ kind: 'scripted' })
  })

  it('leaves the scripted subagent out when it is disabled, and keeps its name reserved', () => {
    const catalog = createSubagentCatalog([researcher], {
      defaultModel: 'scripted:default',
      scriptedEnabled: false,
    })
    expect(catalog.admit('scripted')).toEqual({ kind: 'unknown', known: ['researcher'] })
    expect(() => createSubagentCatalog([spec('scripted')], { scriptedEnabled: false })).toThrow(
      expect.objectContaining({ code: 'DUPLICATE_SUBAGENT' }),
    )
  })

  it('refuses a spec whose required tool the fleet does not offer, naming the tool', () => {
    const catalog = createSubagentCatalog([writer])
    const admission = catalog.admit('writer')
    expect(admission.kind).toBe('refused')
    expect(admission.kind === 'refused' ? admission.reason : '').toMatch(/"write" is not offered/)
    expect(catalog.runnable.has('writer')).toBe(false)
    expect(catalog.refused.get('writer')?.diagnostics).toEqual([
      expect.objectContaining({ kind: 'missing_required_tool', tool_name: 'write' }),
    ])
  })

  it('runs that spec once the fleet offers the tool: the offered list decides', () => {
    const catalog = createSubagentCatalog([writer], {
      offeredTools: [{ name: 'view' }, { name: 'write' }],
    })
    expect(catalog.admit('writer')).toEqual({ kind: 'runnable', steerable: true })
  })

  it('refuses a spec that requires a main-agent-only tool or a tool it denies itself', () => {
    const catalog = createSubagentCatalog([asker, selfDenied], {
      offeredTools: [{ name: 'view' }, { name: 'ask_user_question' }],
    })
    const asked = catalog.admit('asker')
    expect(asked.kind === 'refused' ? asked.reason : asked.kind).toMatch(
      /"ask_user_question" is main-agent-only/,
    )
    const denied = catalog.admit('self-denied')
    expect(denied.kind === 'refused' ? denied.reason : denied.kind).toMatch(
      /"view" is denied by the subagent's tool policy/,
    )
  })

  it('answers an unknown name with the runnable names only', () => {
    const catalog = createSubagentCatalog([researcher, writer, external])
    expect(catalog.admit('nobody')).toEqual({
      kind: 'unknown',
      known: ['scripted', 'researcher', 'external'],
    })
  })

  it('fails to load when a spec takes the built-in name or two specs share a name', () => {
    expect(() => createSubagentCatalog([spec('scripted')])).toThrow(
      expect.objectContaining({ code: 'DUPLICATE_SUBAGENT' }),
    )
    expect(() => createSubagentCatalog([writer, spec('writer')])).toThrow(
      expect.objectContaining({ code: 'DUPLICATE_SUBAGENT' }),
    )
  })

  it('fails to load a directory in which two files declare one name', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'subagent-catalog-'))
    try {
      await writeFile(join(dir, 'a.md'), '---\nname: twin\ndescription: one\n---\nA\n')
      await writeFile(join(dir, 'b.md'), '---\nname: twin\ndescription: two\n---\nB\n')
      await expect(loadSubagentCatalog({ subagentsDir: dir })).rejects.toMatchObject({
        code: 'DUPLICATE_SUBAGENT',
      })
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  })

  it('logs one line naming every runnable subagent and one warning per refused spec', () => {
    const { logger, lines } = recordingLogger()
    createSubagentCatalog([researcher, writer, asker], { logger })
    expect(lines).toEqual([
      {
        level: 'info',
        fields: { runnable: ['scripted', 'researcher'], refused: ['writer', 'asker'] },
        message: 'subagents loaded',
      },
      {
        level: 'warn',
        fields: expect.objectContaining({
          subagent: 'writer',
          reason: expect.stringContaining('"write"') as string,
        }) as Record<string, unknown>,
        message: 'subagent refused',
      },
      {
        level: 'warn',
        fields: expect.objectContaining({ subagent: 'asker' }) as Record<string, unknown>,
        message: 'subagent refused',
      },
    ])
  })
})
