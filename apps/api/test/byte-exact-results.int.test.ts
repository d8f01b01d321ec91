import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { TerminalAttemptView } from '@baton/contracts'
import { describe, expect, test } from '@baton/testing'

// Reads a workspace file through `view`, then answers with every user message it was given.
const READER = `---
name: reader
description: Reads a binary-ish workspace file
tools: [view]
model: scripted:read-then-recall
---
You read files.
`
const READ_THEN_RECALL = {
  steps: [
    { kind: 'tool-calls', calls: [{ toolName: 'view', input: { path: 'data.bin' } }] },
    { kind: 'recall' },
  ],
}
const FILE_TEXT = 'header\u0000\u0000body \uFDD0 marker\u0000end\n'

describe('no text a child produces can make a commit fail', () => {
  test('one poison output among 50 concurrent commits: all 50 reach terminal with their own result, none process_lost', async ({
    baton,
  }) => {
    const { client } = await baton({ workerEnv: { WORKER_CONCURRENCY: '100' } })
    const outputs = Array.from({ length: 50 }, (_, i) =>
      i === 23 ? 'poison \u0000 here' : `r${i}`,
    )
    // The same delay for all: they finish together and share the worker's batched commits.
    const { results } = await client.delegateBatch(
      'poison',
      outputs.map((output) => ({
        name: 'scripted',
        prompt: JSON.stringify({ output, delayMs: 500 }),
      })),
    )
    const ids = results.map((r) => ('attemptId' in r.body ? r.body.attemptId : ''))
    const views = (await Promise.all(
      ids.map((id) => client.wait(id, 30_000)),
    )) as TerminalAttemptView[]
    expect(views.map((v) => [v.status, v.stopReason, v.failureCategory])).toEqual(
      outputs.map(() => ['terminal', 'completed', null]),
    )
    views.forEach((view, i) => {
      if (i !== 23) expect(view.output).toBe(outputs[i])
    })
    const poison = views[23]
    expect(poison).toMatchObject({ output: 'poison \uFFFD here', outputTruncated: true })
    const artifact = await client.readArtifact(poison?.artifact?.artifactId ?? '')
    expect(artifact.text()).toBe(outputs[23])
  })

  test('a markdown subagent whose view tool reads NUL bytes completes, its history reads back exactly, and a continuation resumes from it', async ({
    baton,
  }) => {
    const root = await mkdtemp(join(tmpdir(), 'baton-nul-'))
    try {
      const [subagents, scripts, workspace] = ['subagents', 'scripts', 'workspace'].map((d) =>
        join(root, d),
      ) as [string, string, string]
      await Promise.all([subagents, scripts, workspace].map((d) => mkdir(d)))
      await writeFile(join(subagents, 'reader.md'), READER)
      await writeFile(join(scripts, 'read-then-recall.json'), JSON.stringify(READ_THEN_RECALL))
      await writeFile(join(workspace, 'data.bin'), FILE_TEXT)
      const stack = await baton({
        env: { SUBAGENTS_DIR: subagents },
        workerEnv: { SCRIPTED_MODELS_DIR: scripts, WORKSPACE_DIR: workspace },
      })
      const { client } = stack
      const first = (await client.delegateAndWait(
        { sessionId: 'nul', name: 'reader', prompt: 'read the file' },
        20_000,
      )) as TerminalAttemptView
      expect(first).toMatchObject({ status: 'terminal', stopReason: 'completed' })
      const history = await client.getAgentHistory(first.agentId)
      expect(first.context).toEqual({ baseSeq: 0, eventCount: history.events.length })
      // The tool result the child saw is in its history with every NUL byte.
      expect(JSON.stringify(history.events)).toContain(JSON.stringify(FILE_TEXT).slice(1, -1))

      const second = (await client.delegateAndWait(
        { sessionId: 'nul', name: 'reader', prompt: 'and again', agentId: first.agentId },
        20_000,
      )) as TerminalAttemptView
      expect(second).toMatchObject({
        status: 'terminal',
        stopReason: 'completed',
        output: 'read the file\nand again',
        context: { baseSeq: history.events.length },
      })
      // The first turn's events read back unchanged after the continuation appended its own.
      const after = await client.getAgentHistory(first.agentId)
      expect(after.events.slice(0, history.events.length)).toEqual(history.events)
      await stack.close()
    } finally {
      await rm(root, { recursive: true, force: true })
    }
  })
})
