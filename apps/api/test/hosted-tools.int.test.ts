// A hosted parent's async delegation tools, asserted on the request its scripted model received
// (the `request` step answers with the tools it was offered and every tool result it was given).
import { randomUUID } from 'node:crypto'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { sql } from 'kysely'
import type { Db } from '@baton/store'
import { describe, eventually, expect, test } from '@baton/testing'
import { hostedEnv, leadWithHelper } from './support/hosted-profiles.ts'

const PROFILES = leadWithHelper('Helps with anything')

async function ledgerCounts(db: Db) {
  const row = await sql<{ attempts: number; agents: number; messages: number }>`
    select (select count(*) from attempts)::int as attempts,
           (select count(*) from agents)::int as agents,
           (select count(*) from attempt_messages)::int as messages
  `.execute(db)
  return row.rows[0]
}

interface Request {
  readonly tools: readonly string[]
  readonly toolResults: readonly { readonly toolName: string; readonly output: unknown }[]
}

describe("a hosted parent's async tools", () => {
  test('the five tools are offered and spawn_delegate is not; a busy, unknown or foreign id and injected host metadata are errors the model reads, with nothing written; wait_subagent answers a snapshot at its bound', async ({
    baton,
    db,
  }) => {
    const env = await hostedEnv(PROFILES, { helper: [{ kind: 'hang' }] })
    const stack = await baton({ env, workers: 0 })
    const { client } = stack
    const { sessionId } = await client.createSession({ profile: 'lead' })
    const other = await client.createSession({ profile: 'lead' })
    // An agent of this session whose attempt is not finished, and one of another session.
    const busy = await client.delegate({ sessionId, name: 'helper', prompt: 'keep busy' })
    const foreign = await client.delegate({
      sessionId: other.sessionId,
      name: 'helper',
      prompt: 'elsewhere',
    })
    const delegate = (input: object) => ({ toolName: 'delegate', input })
    await writeFile(
      join(env.SCRIPTED_MODELS_DIR!, 'lead.json'),
      JSON.stringify({
        steps: [
          {
            kind: 'tool-calls',
            calls: [
              delegate({ name: 'helper', prompt: 'again', agent_id: busy.agentId }),
              delegate({ name: 'helper', prompt: 'who?', agent_id: randomUUID() }),
              delegate({ name: 'helper', prompt: 'theirs', agent_id: foreign.agentId }),
              delegate({ name: 'helper', prompt: 'x', metadata: { traceId: 'smuggled' } }),
              delegate({ name: 'ghost', prompt: 'boo' }),
              {
                toolName: 'steer_subagent',
                input: { attempt_id: foreign.attemptId, message: 'hi' },
              },
              { toolName: 'cancel_subagent', input: { attempt_id: randomUUID() } },
              { toolName: 'wait_subagent', input: { attempt_id: busy.attemptId, timeout_ms: 300 } },
              { toolName: 'subagent_info', input: {} },
              delegate({ name: 'helper', prompt: 'a fresh task' }),
            ],
          },
          { kind: 'request' },
        ],
      }),
    )
    const before = await ledgerCounts(db)
    await stack.startWorker()
    const run = await client.startRun(sessionId, { input: 'go' })
    const ended = await eventually(
      async () => {
        const view = await client.waitRun(run.runId, 5000)
        return view.status === 'completed' ? view : undefined
      },
      { timeoutMs: 60_000, what: 'the parent run to end' },
    )
    const request = JSON.parse(ended.output ?? '{}') as Request
    expect(request.tools).toEqual([
      'cancel_subagent',
      'delegate',
      'steer_subagent',
      'subagent_info',
      'wait_subagent',
    ])
    const outputs = request.toolResults.map((r) => [r.toolName, r.output])
    expect(outputs).toHaveLength(10)
    const error = (i: number) => (outputs[i]![1] as { error?: string }).error
    expect(error(0)).toMatch(/is busy/)
    expect(error(1)).toMatch(/unknown agent_id/)
    expect(error(2)).toMatch(/unknown agent_id/)
    expect(error(3)).toMatch(/unknown key\(s\) metadata/)
    expect(error(4)).toMatch(/unknown subagent "ghost"; you may delegate to: helper/)
    expect(error(5)).toMatch(/unknown attempt_id/)
    expect(error(6)).toMatch(/unknown attempt_id/)
    // The busy attempt has not finished: the wait answers its snapshot at the bound.
    expect(outputs[7]![1]).toMatchObject({ attempt: { attemptId: busy.attemptId } })
    expect((outputs[7]![1] as { attempt: { status: string } }).attempt.status).not.toBe('terminal')
    expect(outputs[8]![1]).toEqual({
      subagents: [{ name: 'helper', description: 'Helps with anything', available: true }],
    })
    const accepted = outputs[9]![1] as { agent_id: string; attempt_id: string; status: string }
    expect(accepted.status).toBe('accepted')
    // Only the parent's own attempt and the one accepted delegation were written.
    expect(await ledgerCounts(db)).toEqual({
      attempts: before!.attempts + 2,
      agents: before!.agents + 1,
      messages: before!.messages,
    })
    const child = await sql<{ parent_run_id: string; session_id: string }>`
      select parent_run_id, session_id from attempts where id = ${accepted.attempt_id}::uuid
    `.execute(db)
    expect(child.rows[0]).toEqual({ parent_run_id: run.runId, session_id: sessionId })
  }, 120_000)
})

describe("a hosted parent's budgets", () => {
  test('a delegate over children per run, or over children running at once, is an error the model reads, and nothing is written', async ({
    baton,
    db,
  }) => {
    const budgeted = `${leadWithHelper('Hangs')}
[profiles.capped]
model_id = "scripted:capped"
subagents = ["helper"]
children_per_run = 2

[profiles.narrow]
model_id = "scripted:narrow"
subagents = ["helper"]
children_running = 1
`
    const three = {
      steps: [
        {
          kind: 'tool-calls',
          calls: ['a', 'b', 'c'].map((prompt) => ({
            toolName: 'delegate',
            input: { name: 'helper', prompt },
          })),
        },
        { kind: 'request' },
      ],
    }
    const env = await hostedEnv(budgeted, {
      helper: [{ kind: 'hang' }],
      lead: [{ kind: 'text', text: 'unused' }],
      capped: three,
      narrow: three,
    })
    const { client } = await baton({ env })
    for (const [profile, admitted, words] of [
      ['capped', 2, 'this run may delegate 2 children and has delegated 2'],
      ['narrow', 1, 'the most this session may run at once is 1'],
    ] as const) {
      const before = await ledgerCounts(db)
      const { sessionId } = await client.createSession({ profile })
      const run = await client.startRun(sessionId, { input: 'go' })
      const ended = await eventually(
        async () => {
          const view = await client.waitRun(run.runId, 5000)
          return view.status === 'completed' ? view : undefined
        },
        { timeoutMs: 60_000, what: `the ${profile} run to end` },
      )
      const results = (JSON.parse(ended.output ?? '{}') as Request).toolResults.map(
        (r) => r.output as { status?: string; error?: string },
      )
      expect(results.filter((r) => r.status === 'accepted')).toHaveLength(admitted)
      const refused = results.filter((r) => r.error !== undefined)
      expect(refused).toHaveLength(3 - admitted)
      for (const r of refused) expect(r.error).toContain(words)
      // The parent's attempt and the admitted children only.
      expect(await ledgerCounts(db)).toEqual({
        attempts: before!.attempts + 1 + admitted,
        agents: before!.agents + 1 + admitted,
        messages: before!.messages,
      })
    }
  }, 120_000)
})
