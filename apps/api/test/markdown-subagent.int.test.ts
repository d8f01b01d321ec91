import { mkdtemp, mkdir, writeFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { sql } from 'kysely'
import { ACP_FIXTURE_AGENT, describe, expect, test } from '@baton/testing'
import { apiTest, delegate, rowCounts } from './support/api-harness.ts'

const RESEARCHER = `---
name: researcher
description: Collect bounded evidence from the workspace
tools: [view]
model: scripted:research
---
You are a careful researcher. Cite the files you read.
`

// An external ACP agent (the ACP provider's fixture agent), started per run over stdio.
const ECHOER = `---
name: echoer
description: An external agent spoken to over the Agent Client Protocol
provider: acp
command: ${process.execPath}
args: [${ACP_FIXTURE_AGENT}]
---
(External agents bring their own instructions.)
`

// Requires a tool no worker offers (workers offer view, list and grep): the fleet cannot run it.
const WRITER = `---
name: writer
description: Writes files
tools: [write]
model: scripted:research
---
You write files.
`

// The scripted model reads a workspace file through the `view` tool, then answers.
const RESEARCH_SCRIPT = {
  steps: [
    { kind: 'tool-calls', calls: [{ toolName: 'view', input: { path: 'notes/fact.txt' } }] },
    { kind: 'text', text: 'The workspace says: the sky is green on Tuesdays.' },
  ],
}

describe('API → worker → markdown-defined subagents: spawn with a scripted model, and an external ACP agent', () => {
  test('a markdown subagent runs through the seam and its outcome ends in the ledger', async ({
    baton,
    db,
  }) => {
    const root = await mkdtemp(join(tmpdir(), 'baton-md-'))
    try {
      const subagentsDir = join(root, 'subagents')
      const scriptsDir = join(root, 'scripts')
      const workspace = join(root, 'workspace')
      await mkdir(subagentsDir)
      await mkdir(scriptsDir)
      await mkdir(join(workspace, 'notes'), { recursive: true })
      await writeFile(join(subagentsDir, 'researcher.md'), RESEARCHER)
      await writeFile(join(subagentsDir, 'echoer.md'), ECHOER)
      await writeFile(join(scriptsDir, 'research.json'), JSON.stringify(RESEARCH_SCRIPT))
      await writeFile(join(workspace, 'notes', 'fact.txt'), 'the sky is green on Tuesdays\n')

      const h = await baton({
        env: { SUBAGENTS_DIR: subagentsDir },
        workerEnv: { SCRIPTED_MODELS_DIR: scriptsDir, WORKSPACE_DIR: workspace },
      })
      const base = h.base
      const response = await fetch(`${base}/v1/sessions/md-session/delegations`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...h.auth },
        body: JSON.stringify({
          name: 'researcher',
          prompt: 'What does the workspace say?',
          wait: { timeoutMs: 10_000 },
        }),
      })
      const body = (await response.json()) as Record<string, unknown>
      expect(response.status).toBe(200)
      expect(body).toMatchObject({
        status: 'terminal',
        stopReason: 'completed',
        output: 'The workspace says: the sky is green on Tuesdays.',
        name: 'researcher',
      })
      const row = await sql<{ stop_reason: string; output_bytes: number }>`
        select stop_reason, output_bytes from attempts where id = ${body.attemptId}
      `.execute(db)
      expect(row.rows).toEqual([{ stop_reason: 'completed', output_bytes: 49 }])

      // The ACP subagent: a real external agent process, with no steering capability.
      const { post } = h
      const echoed = await post('/v1/sessions/md-session/delegations', {
        name: 'echoer',
        prompt: 'hello over acp',
        wait: { timeoutMs: 15_000 },
      })
      expect(echoed.body).toMatchObject({
        status: 'terminal',
        stopReason: 'completed',
        output: 'echo: hello over acp',
      })
      const hanging = await post('/v1/sessions/md-session/delegations', {
        name: 'echoer',
        prompt: 'hang',
      })
      const hangingId = hanging.body.attemptId as string
      await h.untilRunning(hangingId)
      expect(await post(`/v1/attempts/${hangingId}/steer`, { content: 'turn left' })).toMatchObject(
        {
          status: 409,
          body: { error: { code: 'STEERING_UNSUPPORTED' } },
        },
      )
      await post(`/v1/attempts/${hangingId}/cancel`, {})
      const cancelled = await fetch(`${base}/v1/attempts/${hangingId}/wait?timeoutMs=10000`, {
        headers: h.auth,
      }).then((r) => r.json())
      expect(cancelled).toMatchObject({ status: 'terminal', stopReason: 'aborted' })

      // A name that is neither built in nor in the directory is refused before any write.
      const unknown = await fetch(`${base}/v1/sessions/md-session/delegations`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...h.auth },
        body: JSON.stringify({ name: 'writer', prompt: 'x' }),
      })
      expect(unknown.status).toBe(400)
      await h.close()
    } finally {
      await rm(root, { recursive: true, force: true })
    }
  })

  test('a spec whose required tool the fleet cannot offer is refused at accept time with the reason, writes nothing, and the worker lists it as refused', async ({
    baton,
    db,
  }) => {
    const root = await mkdtemp(join(tmpdir(), 'baton-md-'))
    try {
      const subagentsDir = join(root, 'subagents')
      await mkdir(subagentsDir)
      await writeFile(join(subagentsDir, 'writer.md'), WRITER)
      await writeFile(join(subagentsDir, 'researcher.md'), RESEARCHER)
      const h = await baton({ workers: 0, env: { SUBAGENTS_DIR: subagentsDir } })
      const before = await rowCounts(db)
      const refused = await h.post(delegate('md-refused'), { name: 'writer', prompt: 'x' })
      expect(refused.status).toBe(400)
      expect(refused.body.error.code).toBe('SUBAGENT_UNAVAILABLE')
      expect(refused.body.error.details.reason).toContain('"write"')
      expect(await rowCounts(db)).toEqual(before)
      // Runnable specs are still accepted.
      expect(
        (await h.post(delegate('md-refused'), { name: 'researcher', prompt: 'x' })).status,
      ).toBe(202)

      const worker = await h.startWorker()
      const refusedLine = worker
        .output()
        .split('\n')
        .map((line) => (line.startsWith('{') ? (JSON.parse(line) as Record<string, unknown>) : {}))
        .find((entry) => entry.msg === 'subagent refused')
      expect(refusedLine).toMatchObject({ subagent: 'writer' })
      expect(String(refusedLine?.reason)).toContain('"write"')
      await h.close()
    } finally {
      await rm(root, { recursive: true, force: true })
    }
  })

  apiTest(
    'SCRIPTED_ENABLED=false: the scripted subagent is unknown to the API and nothing is written',
    async ({ inProcessApi, db }) => {
      const h = await inProcessApi({ SCRIPTED_ENABLED: 'false' })
      const before = await rowCounts(db)
      const refused = await h.post(delegate('no-scripted'), { name: 'scripted', prompt: 'x' })
      expect(refused.status).toBe(400)
      expect(refused.body.error).toMatchObject({ code: 'UNKNOWN_SUBAGENT', details: { known: [] } })
      expect(await rowCounts(db)).toEqual(before)
    },
  )
})
