import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { loadSubagentDirectory } from './subagent-directory.ts'

let dir: string
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'subagents-'))
})
afterEach(async () => {
  await rm(dir, { recursive: true, force: true })
})

const file = (name: string) =>
  `---\nname: ${name}\ndescription: ${name} agent\n---\nYou are ${name}.\n`

describe('loadSubagentDirectory', () => {
  it('reads every *.md file in the directory, in file-name order, ignoring other files and subdirectories', async () => {
    await writeFile(join(dir, 'b.md'), file('beta'))
    await writeFile(join(dir, 'a.md'), file('alpha'))
    await writeFile(join(dir, 'notes.txt'), 'not a spec')
    await mkdir(join(dir, 'nested.md'))
    const specs = await loadSubagentDirectory(dir)
    expect(specs.map((spec) => spec.name)).toEqual(['alpha', 'beta'])
  })

  it('rejects two files declaring the same subagent name', async () => {
    await writeFile(join(dir, 'one.md'), file('dup'))
    await writeFile(join(dir, 'two.md'), file('dup'))
    await expect(loadSubagentDirectory(dir)).rejects.toMatchObject({ code: 'DUPLICATE_SUBAGENT' })
  })

  it('names the offending file when one spec is invalid', async () => {
    await writeFile(join(dir, 'broken.md'), 'no frontmatter')
    await expect(loadSubagentDirectory(dir)).rejects.toMatchObject({
      code: 'INVALID_SPEC',
      message: expect.stringContaining('broken.md') as string,
    })
  })
})
