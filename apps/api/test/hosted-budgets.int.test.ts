// A hosted session's budgets hold for delegations made over HTTP as for the parent's `delegate`
// tool (one check): over one, HTTP answers 409 BUDGET_EXCEEDED and the tool an error the model
// reads, and the ledger is unchanged. The tokens budget counts what finished children spent; the
// depth budget bounds chains that name their parent attempt; and delegations at the same moment
// are checked and admitted one at a time, so none overshoots.
import { sql } from 'kysely'
import type { Db } from '@baton/store'
import { describe, eventually, expect, test } from '@baton/testing'
import { hostedEnv } from './support/hosted-profiles.ts'

const PROFILES = `
[profiles.narrow]
model_id = "scripted:narrow"
subagents = ["helper"]
children_running = 1

[profiles.capped]
model_id = "scripted:capped"
subagents = ["helper"]
children_per_run = 1

[profiles.thrifty]
model_id = "scripted:thrifty"
subagents = ["quick"]
child_tokens = 1

[profiles.shallow]
model_id = "scripted:shallow"
subagents = ["helper"]
child_depth = 2

[profiles.trio]
model_id = "scripted:trio"
subagents = ["helper"]
children_running = 3

[profiles.helper]
model_id = "scripted:helper"

[profiles.quick]
model_id = "scripted:quick"

[subagents.helper]
profile = "helper"
description = "Works until it is stopped"

[subagents.quick]
profile = "quick"
description = "Answers at once"
`

/**
 * Everything a refused delegation could have written (the children already admitted go on being
 * claimed and run: those transitions are not the refusal's).
 */
async function ledger(db: Db) {
  const row = await sql<{ attempts: number; agents: number; accepted: number }>`
    select (select count(*) from attempts)::int as attempts,
           (select count(*) from agents)::int as agents,
           (select count(*) from attempt_transitions where event = 'accepted')::int as accepted
  `.execute(db)
  return row.rows[0]
}

/** A profile's scripts: a hanging helper, and parents that are never run. */
const SCRIPTS = {
  helper: [{ kind: 'hang' }],
  quick: [{ kind: 'text', text: 'answered' }],
  narrow: [{ kind: 'text', text: 'unused' }],
  shallow: [{ kind: 'text', text: 'unused' }],
  trio: [{ kind: 'text', text: 'unused' }],
}

interface Request {
  readonly toolResults: readonly { readonly toolName: string; readonly output: unknown }[]
}

describe("a hosted session's budgets over HTTP", () => {
  test('children running at once, children per run and child tokens each refuse an HTTP delegation (single and batch) with 409 BUDGET_EXCEEDED and an unchanged ledger; the tool gets the same check as an error it reads', async ({
    baton,
    db,
  }) => {
    const env = await hostedEnv(PROFILES, {
      ...SCRIPTS,
      capped: [{ kind: 'hang', text: 'thinking' }],
      thrifty: {
        steps: [
          {
            kind: 'tool-calls',
            calls: [{ toolName: 'delegate', input: { name: 'quick', prompt: 'one more' } }],
          },
          { kind: 'request' },
        ],
      },
    })
    const { client, post } = await baton({ env })
    const refused = async (
      sessionId: string,
      body: Record<string, unknown>,
      budget: string,
      limit: number,
    ) => {
      const before = await ledger(db)
      const single = await post(`/v1/sessions/${sessionId}/delegations`, body)
      expect(single.status).toBe(409)
      expect(single.body).toMatchObject({
        error: { code: 'BUDGET_EXCEEDED', details: { sessionId, budget, limit } },
      })
      const batch = await post(`/v1/sessions/${sessionId}/delegations/batch`, { items: [body] })
      expect(batch.status).toBe(200)
      expect(batch.body).toMatchObject({
        results: [{ status: 409, body: { error: { code: 'BUDGET_EXCEEDED' } } }],
      })
      expect(await ledger(db)).toEqual(before)
    }

    // Children running at once: one is running, a second is refused, alone or in a batch.
    const narrow = await client.createSession({ profile: 'narrow' })
    await client.delegate({ sessionId: narrow.sessionId, name: 'helper', prompt: 'busy' })
    await refused(narrow.sessionId, { name: 'helper', prompt: 'a second' }, 'children_running', 1)
    // A batch counts its own items: one of two fits, in a fresh session.
    const wide = await client.createSession({ profile: 'narrow' })
    const pair = await post(`/v1/sessions/${wide.sessionId}/delegations/batch`, {
      items: [
        { name: 'helper', prompt: 'a' },
        { name: 'helper', prompt: 'b' },
      ],
    })
    expect(pair.body).toMatchObject({
      results: [{ status: 202 }, { status: 409, body: { error: { code: 'BUDGET_EXCEEDED' } } }],
    })

    // Children per run: the active run delegated one over HTTP; a second for it is refused.
    const capped = await client.createSession({ profile: 'capped' })
    const run = await client.startRun(capped.sessionId, { input: 'go' })
    await eventually(
      async () => ((await client.getRun(run.runId)).status === 'active' ? true : undefined),
      { timeoutMs: 60_000, what: 'the capped run to be active' },
    )
    const forRun = { name: 'helper', prompt: 'for the run', parentRunId: run.runId }
    expect((await post(`/v1/sessions/${capped.sessionId}/delegations`, forRun)).status).toBe(202)
    await refused(capped.sessionId, forRun, 'children_per_run', 1)

    // Child tokens: a finished child spent some; the next delegation is refused.
    const thrifty = await client.createSession({ profile: 'thrifty' })
    const spent = await client.delegateAndWait(
      { sessionId: thrifty.sessionId, name: 'quick', prompt: 'first' },
      30_000,
    )
    expect(spent.status).toBe('terminal')
    const tokens = await sql<{ usage_tokens: string | null }>`
      select usage_tokens from attempts where id = ${spent.attemptId}::uuid
    `.execute(db)
    expect(Number(tokens.rows[0]?.usage_tokens)).toBeGreaterThan(0)
    await refused(thrifty.sessionId, { name: 'quick', prompt: 'second' }, 'child_tokens', 1)

    // The parent's own `delegate` is refused by the same check: an error it reads, nothing written.
    const children = async () =>
      (
        await sql<{ n: number }>`
          select count(*)::int as n from attempts
          where session_id = ${thrifty.sessionId} and parent_run_id is not null
        `.execute(db)
      ).rows[0]?.n
    expect(await children()).toBe(0)
    const parent = await client.startRun(thrifty.sessionId, { input: 'go' })
    const ended = await eventually(
      async () => {
        const view = await client.waitRun(parent.runId, 5000)
        return view.status === 'completed' ? view : undefined
      },
      { timeoutMs: 60_000, what: 'the thrifty run to end' },
    )
    const [result] = (JSON.parse(ended.output ?? '{}') as Request).toolResults
    expect(result?.output).toEqual({
      error: expect.stringContaining("over budget: this session's children spent") as unknown,
    })
    expect(await children()).toBe(0)
  }, 180_000)
})

describe("a hosted session's depth budget over HTTP", () => {
  test('a chain of delegations naming their parent attempts may go as deep as child_depth; one deeper is refused with 409 BUDGET_EXCEEDED (single and batch) and nothing is written', async ({
    baton,
    db,
  }) => {
    const { client, post } = await baton({ env: await hostedEnv(PROFILES, SCRIPTS) })
    const { sessionId } = await client.createSession({ profile: 'shallow' })
    const delegate = async (body: Record<string, unknown>) =>
      post(`/v1/sessions/${sessionId}/delegations`, { name: 'helper', ...body })
    // Depth 1 (no parent attempt), then depth 2 naming it: both within `child_depth = 2`.
    const first = await delegate({ prompt: 'one' })
    expect(first.status).toBe(202)
    const one = (first.body as { attemptId: string }).attemptId
    const second = await delegate({ prompt: 'two', parentAttemptId: one })
    expect(second.status).toBe(202)
    const two = (second.body as { attemptId: string }).attemptId
    const depths = await sql<{ id: string; depth: number }>`
      select id, coalesce(depth, 1) as depth from attempts where session_id = ${sessionId}
    `.execute(db)
    expect(Object.fromEntries(depths.rows.map((r) => [r.id, r.depth]))).toEqual({
      [one]: 1,
      [two]: 2,
    })

    // Depth 3, naming the child at depth 2: refused, alone or in a batch, and nothing written.
    const before = await ledger(db)
    const deeper = { name: 'helper', prompt: 'three', parentAttemptId: two }
    const single = await post(`/v1/sessions/${sessionId}/delegations`, deeper)
    expect(single.status).toBe(409)
    expect(single.body).toMatchObject({
      error: {
        code: 'BUDGET_EXCEEDED',
        message: expect.stringContaining('would be at depth 3') as unknown,
        details: { sessionId, budget: 'child_depth', limit: 2, used: 2 },
      },
    })
    const batch = await post(`/v1/sessions/${sessionId}/delegations/batch`, {
      items: [deeper, { name: 'helper', prompt: 'beside', parentAttemptId: one }],
    })
    expect(batch.body).toMatchObject({
      results: [
        {
          status: 409,
          body: { error: { code: 'BUDGET_EXCEEDED', details: { budget: 'child_depth' } } },
        },
        { status: 202 },
      ],
    })
    const after = await ledger(db)
    expect(after).toEqual({
      attempts: before!.attempts + 1,
      agents: before!.agents + 1,
      accepted: before!.accepted + 1,
    })
    // A sibling at depth 1 is still admitted: only the chain is bounded.
    expect((await delegate({ prompt: 'again' })).status).toBe(202)
  }, 120_000)
})

describe("a hosted session's budgets under concurrent delegations", () => {
  test('twenty delegations at once into a session that may run three children: exactly three are accepted, the rest 409 BUDGET_EXCEEDED, and the ledger holds three children', async ({
    baton,
    db,
  }) => {
    const { client, post } = await baton({ env: await hostedEnv(PROFILES, SCRIPTS) })
    const { sessionId } = await client.createSession({ profile: 'trio' })
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        post(`/v1/sessions/${sessionId}/delegations`, { name: 'helper', prompt: `n${i}` }),
      ),
    )
    const statuses = answers.map((a) => a.status)
    expect(statuses.filter((s) => s === 202)).toHaveLength(3)
    expect(statuses.filter((s) => s === 409)).toHaveLength(17)
    for (const a of answers.filter((a) => a.status === 409))
      expect(a.body).toMatchObject({
        error: { code: 'BUDGET_EXCEEDED', details: { budget: 'children_running', limit: 3 } },
      })
    const children = await sql<{ n: number }>`
      select count(*)::int as n from attempts where session_id = ${sessionId}
    `.execute(db)
    expect(children.rows[0]?.n).toBe(3)
  }, 120_000)
})
