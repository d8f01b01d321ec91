import { mkdir, mkdtemp, symlink, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { beforeAll, describe, expect, test } from 'vitest'
import { WorkspacePathError } from './agents-error.ts'
import { resolveWorkspacePath } from './workspace-path.ts'
import { grepFiles, listDirectory, viewFile } from './workspace-tools.ts'

let root: string
let outside: string
const limits = { maxFileBytes: 1024 * 1024, maxMatches: 100 }

beforeAll(async () => {
  const base = await mkdtemp(path.join(tmpdir(), 'baton-ws-'))
  root = path.join(base, 'workspace')
  outside = path.join(base, 'outside')
  await mkdir(path.join(root, 'src'), { recursive: true })
  await mkdir(outside)
  await writeFile(path.join(root, 'README.md'), 'line one\nneedle here\nline three\n')
  await writeFile(path.join(root, 'src', 'main.ts'), 'const needle = 1\n')
  await writeFile(path.join(outside, 'secret.txt'), 'needle outside\n')
  await symlink(path.join(outside, 'secret.txt'), path.join(root, 'escape.txt'))
  await symlink(outside, path.join(root, 'escape-dir'))
})

describe('workspace tools', () => {
  test('view reads a file inside the working directory, optionally by line range', async () => {
    const whole = await viewFile(root, 'README.md', { maxFileBytes: 1024 })
    expect(whole.content).toContain('needle here')
    const range = await viewFile(root, 'README.md', {
      startLine: 2,
      endLine: 2,
      maxFileBytes: 1024,
    })
    expect(range.content).toBe('needle here')
  })

  test('list lists a directory inside the working directory', async () => {
    const listing = await listDirectory(root, '.')
    expect(listing.entries).toEqual([
      { name: 'README.md', type: 'file' },
      { name: 'escape-dir', type: 'symlink' },
      { name: 'escape.txt', type: 'symlink' },
      { name: 'src', type: 'directory' },
    ])
  })

  test('grep finds matches inside the working directory and never follows symlinks out', async () => {
    const result = await grepFiles(root, '.', { pattern: 'needle', regex: false, ...limits })
    expect(result.matches.map((match) => `${match.path}:${match.line}`)).toEqual([
      'README.md:2',
      'src/main.ts:1',
    ])
  })

  test('a path climbing out with .. is refused with a typed error', async () => {
    await expect(
      viewFile(root, '../outside/secret.txt', { maxFileBytes: 1024 }),
    ).rejects.toBeInstanceOf(WorkspacePathError)
    await expect(listDirectory(root, '..')).rejects.toMatchObject({
      code: 'WORKSPACE_PATH_REFUSED',
    })
  })

  test('an absolute path outside the working directory is refused', async () => {
    await expect(
      viewFile(root, path.join(outside, 'secret.txt'), { maxFileBytes: 1024 }),
    ).rejects.toBeInstanceOf(WorkspacePathError)
  })

  test('an absolute path inside the working directory is allowed', async () => {
    expect(await resolveWorkspacePath(root, path.join(root, 'README.md'))).toMatch(/README\.md$/)
  })

  test('a symlink pointing outside the working directory is refused', async () => {
    await expect(viewFile(root, 'escape.txt', { maxFileBytes: 1024 })).rejects.toBeInstanceOf(
      WorkspacePathError,
    )
    await expect(listDirectory(root, 'escape-dir')).rejects.toBeInstanceOf(WorkspacePathError)
    await expect(
      grepFiles(root, 'escape-dir', { pattern: 'needle', regex: false, ...limits }),
    ).rejects.toBeInstanceOf(WorkspacePathError)
  })
})
