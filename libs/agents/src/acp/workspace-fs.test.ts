import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { RequestError } from '@agentclientprotocol/sdk'
import { afterEach, beforeEach, describe, expect, test } from 'vitest'
import { readWorkspaceTextFile } from './workspace-fs.ts'

describe('readWorkspaceTextFile', () => {
  let workspace: string
  beforeEach(async () => {
    workspace = await mkdtemp(join(tmpdir(), 'baton-acp-fs-'))
    await writeFile(join(workspace, 'lines.txt'), 'one\ntwo\nthree\nfour')
    await mkdir(join(workspace, 'dir'))
  })
  afterEach(async () => {
    await rm(workspace, { recursive: true, force: true })
  })

  test('honours the 1-based line and the limit', async () => {
    const path = join(workspace, 'lines.txt')
    await expect(readWorkspaceTextFile(workspace, { path })).resolves.toBe('one\ntwo\nthree\nfour')
    await expect(readWorkspaceTextFile(workspace, { path, line: 2, limit: 2 })).resolves.toBe(
      'two\nthree',
    )
    await expect(readWorkspaceTextFile(workspace, { path, line: 3, limit: null })).resolves.toBe(
      'three\nfour',
    )
  })

  test.each([
    ['a relative path', 'lines.txt'],
    ['a directory', 'dir'],
    ['the workspace root itself', '.'],
  ])('refuses %s', async (_label, relative) => {
    const path = relative === 'lines.txt' ? relative : join(workspace, relative)
    await expect(readWorkspaceTextFile(workspace, { path })).rejects.toBeInstanceOf(RequestError)
  })
})
