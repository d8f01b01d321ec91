import { readFileSync } from 'node:fs'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { isSubagentError } from './errors.ts'
import { exceededBudget, parseProfiles } from './profiles.ts'
import { loadSubagentCatalog } from './subagent-catalog.ts'

const GOOD = `# the example of the seed, on scripted models
[profiles.default]
model_id = "scripted:parent"
subagents = ["research"]

[profiles.research]
model_id = "scripted:child"
toolsets = ["filesystem", "grep"]

[subagents.research]
profile = "research"
description = "Collect bounded evidence"
required_tools = ["grep"]
optional_tools = ["view"]
`

/** A malformed file, the line its refusal must name, and words of its problem. */
const MALFORMED: readonly (readonly [string, string, number, string])[] = [
  ['not TOML', '[profiles.default]\nmodel_id = "scripted:p\n', 2, 'not valid TOML'],
  ['unknown top-level table', 'x = 1\n[profiles.a]\nmodel_id = "scripted:a"\n', 1, 'unknown key'],
  ['a profile without a model', '[profiles.a]\nsubagents = []\n', 1, '"model_id"'],
  [
    'a model id without a provider',
    '[profiles.a]\ntoolsets = []\nmodel_id = "gpt"\n',
    3,
    'must look like "<provider>:<model>"',
  ],
  [
    'an unknown model provider',
    '[profiles.a]\n\nmodel_id = "acme:big"\n',
    3,
    'unknown provider "acme"',
  ],
  [
    'an unknown toolset',
    '[profiles.a]\nmodel_id = "scripted:a"\ntoolsets = ["shell"]\n',
    3,
    'unknown toolset "shell"',
  ],
  [
    'an unknown subagent',
    '[profiles.a]\nmodel_id = "scripted:a"\nsubagents = ["ghost"]\n',
    3,
    'unknown subagent "ghost"',
  ],
  [
    'a subagent on an unknown profile',
    '[profiles.a]\nmodel_id = "scripted:a"\n\n[subagents.s]\ndescription = "d"\nprofile = "nope"\n',
    6,
    'unknown profile "nope"',
  ],
  [
    'an unknown key in a profile',
    '[profiles.a]\nmodel_id = "scripted:a"\nmodel = "x"\n',
    3,
    'unknown key(s) model',
  ],
  [
    'a subagent without a description',
    '[profiles.a]\nmodel_id = "scripted:a"\n[subagents.s]\nprofile = "a"\n',
    3,
    '"description"',
  ],
  [
    'a required tool outside the profile toolsets',
    '[profiles.a]\nmodel_id = "scripted:a"\ntoolsets = ["grep"]\n[subagents.s]\nprofile = "a"\ndescription = "d"\nrequired_tools = ["view"]\n',
    7,
    'tool "view" is in no toolset of profile "a"',
  ],
  [
    'a tokens budget that is not a number',
    '[profiles.a]\nmodel_id = "scripted:a"\nchild_tokens = "lots"\n',
    3,
    '"child_tokens"',
  ],
  [
    'a negative tokens budget',
    '[profiles.a]\nmodel_id = "scripted:a"\n\nchild_tokens = -5\n',
    4,
    '"child_tokens": Too small',
  ],
  [
    'a depth budget that is not a whole number',
    '[profiles.a]\nmodel_id = "scripted:a"\nchild_depth = 1.5\n',
    3,
    '"child_depth"',
  ],
  [
    'a depth budget of zero',
    '[profiles.a]\nmodel_id = "scripted:a"\nsubagents = []\n\nchild_depth = 0\n',
    5,
    '"child_depth": Too small',
  ],
  [
    'a depth budget that is text',
    '[profiles.a]\nmodel_id = "scripted:a"\nchild_depth = "deep"\n',
    3,
    '"child_depth"',
  ],
  [
    'subagents not a list',
    '[profiles.a]\nmodel_id = "scripted:a"\nsubagents = "research"\n',
    3,
    '"subagents"',
  ],
]

describe('profiles file', () => {
  it('reads the seed shape: profiles, the subagents they expose, toolsets and child tools', () => {
    const file = parseProfiles(GOOD, 'profiles.toml')
    expect(file.profiles.get('default')).toEqual({
      name: 'default',
      modelId: 'scripted:parent',
      subagents: ['research'],
      toolsets: [],
      budgets: {},
    })
    expect(file.subagents.get('research')).toEqual({
      name: 'research',
      profile: 'research',
      description: 'Collect bounded evidence',
      requiredTools: ['grep'],
      optionalTools: ['view'],
    })
  })

  it('reads every budget, and refuses a child deeper than the depth budget by the one check', () => {
    const file = parseProfiles(
      '[profiles.a]\nmodel_id = "scripted:a"\nchildren_per_run = 3\nchildren_running = 2\nchild_tokens = 10\nchild_depth = 2\n',
      'profiles.toml',
    )
    const budgets = file.profiles.get('a')?.budgets
    expect(budgets).toEqual({
      childrenPerRun: 3,
      childrenRunning: 2,
      childTokens: 10,
      childDepth: 2,
    })
    const use = { ofRun: 0, running: 0, childTokens: 0, depth: 1 }
    expect(exceededBudget(budgets, use, true)).toBeUndefined()
    expect(exceededBudget(budgets, { ...use, depth: 2 }, false)).toBeUndefined()
    expect(exceededBudget(budgets, { ...use, depth: 3 }, false)).toEqual({
      budget: 'child_depth',
      limit: 2,
      used: 2,
      message:
        'over budget: this child would be at depth 3, the deepest this session may delegate is 2',
    })
  })

  it("docs/hosted.md's sample profiles are one valid file, its budgets as documented", () => {
    const page = readFileSync(new URL('../../../docs/hosted.md', import.meta.url), 'utf8')
    const samples = [...page.matchAll(/```text\n([\s\S]*?)```/g)]
      .map((m) => (m[1] ?? '').replace(/^ {2}/gm, ''))
      .filter((text) => text.includes('[profiles.'))
    expect(samples.length).toBeGreaterThanOrEqual(2)
    const file = parseProfiles(samples.join('\n'), 'docs/hosted.md')
    expect(file.profiles.get('careful')?.budgets).toEqual({
      childrenPerRun: 4,
      childrenRunning: 2,
      childTokens: 200000,
      childDepth: 2,
    })
  })

  it.each(MALFORMED)('refuses %s, naming the file, line and problem', (_, text, line, words) => {
    let refused: unknown
    try {
      parseProfiles(text, '/etc/baton/profiles.toml')
    } catch (error) {
      refused = error
    }
    expect(isSubagentError(refused, 'INVALID_PROFILES')).toBe(true)
    const message = (refused as Error).message
    expect(message).toContain(`/etc/baton/profiles.toml:${line}: `)
    expect(message).toContain(words)
  })

  it('joins the markdown specs in the one catalog; a child runs on its profile model and tools', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'baton-profiles-'))
    try {
      const profilesFile = join(dir, 'profiles.toml')
      await writeFile(profilesFile, GOOD)
      await writeFile(
        join(dir, 'writer.md'),
        '---\nname: writer\ndescription: writes\nmodel: scripted:w\n---\nWrite.\n',
      )
      const catalog = await loadSubagentCatalog({ subagentsDir: dir, profilesFile })
      expect([...catalog.runnable.keys()].sort()).toEqual(['research', 'scripted', 'writer'])
      expect(catalog.runnable.get('research')).toMatchObject({
        agentOptions: { model: 'scripted:child' },
        toolFilter: { deny: ['list'] },
      })
      expect([...catalog.profiles.keys()]).toEqual(['default', 'research'])
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  })

  it('refuses a profiles subagent whose name a markdown spec already took', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'baton-profiles-'))
    try {
      const profilesFile = join(dir, 'profiles.toml')
      await writeFile(profilesFile, GOOD)
      await writeFile(join(dir, 'research.md'), '---\nname: research\ndescription: r\n---\nR.\n')
      await expect(loadSubagentCatalog({ subagentsDir: dir, profilesFile })).rejects.toThrow(
        /declared twice/,
      )
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  })
})
