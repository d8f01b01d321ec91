import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Writable } from 'node:stream'
import { createLogger } from '@baton/observability'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { loadWorkerSubagents } from './subagent-catalog.ts'

let dir: string
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'worker-subagents-'))
})
afterEach(async () => {
  await rm(dir, { recursive: true, force: true })
})

/** A real pino logger whose JSON lines land in `records`, so the test reads what operators see. */
function capturedLogger() {
  const records: Record<string, unknown>[] = []
  const destination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString('utf8').split('\n'))
        if (line !== '') records.push(JSON.parse(line) as Record<string, unknown>)
      done()
    },
  })
  return { logger: createLogger({ service: 'test', destination }), records }
}

describe('loadWorkerSubagents', () => {
  it('registers only what the catalog finds runnable and logs the refused spec with its reason', async () => {
    await writeFile(
      join(dir, 'researcher.md'),
      '---\nname: researcher\ndescription: reads\ntools: [view]\nmodel: scripted:r\n---\nRead.\n',
    )
    await writeFile(
      join(dir, 'writer.md'),
      '---\nname: writer\ndescription: writes\ntools: [view, write]\n---\nWrite.\n',
    )
    await writeFile(
      join(dir, 'external.md'),
      '---\nname: external\ndescription: acp\nprovider: acp\ncommand: /bin/true\n---\nX\n',
    )
    const { logger, records } = capturedLogger()
    const subagents = await loadWorkerSubagents({
      subagentsDir: dir,
      defaultModel: 'scripted:default',
      models: {},
      logger,
    })

    expect([...subagents.entries.keys()].sort()).toEqual(['external', 'researcher', 'scripted'])
    expect(subagents.entries.get('researcher')).toMatchObject({
      provider: 'spawn',
      agentOptions: { model: 'scripted:r' },
      toolFilter: { deny: ['list', 'grep'] },
    })
    expect(subagents.entries.get('external')?.provider).toBe('acp:external')
    expect([...subagents.service.providerNames()].sort()).toEqual([
      'acp:external',
      'scripted',
      'spawn',
    ])

    const loaded = records.find((r) => r.msg === 'subagents loaded')
    expect(loaded).toMatchObject({ runnable: ['scripted', 'external', 'researcher'] })
    expect(loaded?.refused).toEqual(['writer'])
    const refusals = records.filter((r) => r.msg === 'subagent refused')
    expect(refusals).toHaveLength(1)
    expect(refusals[0]).toMatchObject({ level: 40, subagent: 'writer' })
    expect(refusals[0]?.reason).toMatch(/"write" is not offered/)
  })
})
