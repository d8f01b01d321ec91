// Cascade cancels of a hosted run: its children, and the children they delegated, end with the
// run, each naming the cascade and the run; without `cascade` they keep running.
import { randomUUID } from 'node:crypto'
import { sql } from 'kysely'
import { cascadeCancelReason } from '@baton/contracts'
import type { Db } from '@baton/store'
import { describe, eventually, expect, test, type StartBaton } from '@baton/testing'
import { hostedEnv, leadWithHelper } from './support/hosted-profiles.ts'

const PROFILES = leadWithHelper('Works until it is stopped')

interface AttemptRow {
  id: string
  status: string
  stop_reason: string | null
  failure_category: string | null
  cancel_reason: string | null
  parent_run_id: string | null
  parent_attempt_id: string | null
}

/** The session's children: every attempt delegated by a run or by another attempt. */
async function childrenOf(db: Db, sessionId: string): Promise<AttemptRow[]> {
  const rows = await sql<AttemptRow>`
    select id, status, stop_reason, failure_category, cancel_reason, parent_run_id,
           parent_attempt_id
    from attempts
    where session_id = ${sessionId}
      and (parent_run_id is not null or parent_attempt_id is not null)
    order by created_at, id
  `.execute(db)
  return rows.rows
}

/**
 * A hosted run whose parent delegates three children that work until stopped, then thinks on;
 * the first child delegates one of its own (over HTTP, naming itself as parent attempt). Answers
 * once all four run.
 */
async function runWithNestedChildren(baton: StartBaton, db: Db) {
  const env = await hostedEnv(PROFILES, {
    helper: [{ kind: 'hang' }],
    lead: {
      steps: [
        {
          kind: 'tool-calls',
          calls: ['one', 'two', 'three'].map((prompt) => ({
            toolName: 'delegate',
            input: { name: 'helper', prompt },
          })),
        },
        { kind: 'hang', text: 'thinking' },
      ],
    },
  })
  const { client } = await baton({ env })
  const { sessionId } = await client.createSession({ profile: 'lead' })
  const run = await client.startRun(sessionId, { input: 'go' })
  const children = await eventually(
    async () => {
      const rows = await childrenOf(db, sessionId)
      return rows.length === 3 && rows.every((r) => r.status === 'running') ? rows : undefined
    },
    { timeoutMs: 60_000, what: 'three children running' },
  )
  const first = children[0]!
  const grandchild = await client.delegate({
    sessionId,
    name: 'helper',
    prompt: 'deeper',
    parentAttemptId: first.id,
  })
  await eventually(
    async () => {
      const rows = await childrenOf(db, sessionId)
      return rows.length === 4 && rows.every((r) => r.status === 'running') ? true : undefined
    },
    { timeoutMs: 60_000, what: 'the grandchild running too' },
  )
  return { client, sessionId, run, first, grandchild }
}

describe('cascade cancel of a hosted run', () => {
  test('with cascade, the run is cancelled and its three children and a grandchild end aborted, each naming the cascade and the run; none is left running', async ({
    baton,
    db,
  }) => {
    const { client, sessionId, run, first, grandchild } = await runWithNestedChildren(baton, db)
    const nested = (await childrenOf(db, sessionId)).find((r) => r.id === grandchild.attemptId)
    expect(nested).toMatchObject({ parent_attempt_id: first.id, parent_run_id: null })

    await client.cancelRun(run.runId, { cascade: true })

    const ended = await eventually(
      async () => {
        const view = await client.waitRun(run.runId, 5000)
        const rows = await childrenOf(db, sessionId)
        return view.status === 'cancelled' && rows.every((r) => r.status === 'terminal')
          ? rows
          : undefined
      },
      { timeoutMs: 60_000, what: 'the run cancelled and every child terminal' },
    )
    expect(ended).toHaveLength(4)
    for (const child of ended)
      expect(child).toMatchObject({
        status: 'terminal',
        stop_reason: 'aborted',
        failure_category: 'cancelled',
        cancel_reason: cascadeCancelReason(run.runId),
      })
    expect(cascadeCancelReason(run.runId)).toContain(run.runId)
    // The reason reaches callers: each child's view says it, as a read and as a wait answer it.
    for (const child of ended) {
      const view = await client.getAttempt(child.id)
      expect(view).toMatchObject({
        status: 'terminal',
        cancelRequested: true,
        cancelReason: cascadeCancelReason(run.runId),
      })
      expect((await client.wait(child.id, 1000)).cancelReason).toBe(cascadeCancelReason(run.runId))
    }
    const open = await sql<{ n: number }>`
      select count(*)::int as n from attempts
      where session_id = ${sessionId} and status <> 'terminal'
    `.execute(db)
    expect(open.rows[0]?.n).toBe(0)
  }, 180_000)

  test('without cascade, the run is cancelled and its children keep running', async ({
    baton,
    db,
  }) => {
    const { client, sessionId, run } = await runWithNestedChildren(baton, db)

    await client.cancelRun(run.runId)

    await eventually(
      async () =>
        (await client.waitRun(run.runId, 5000)).status === 'cancelled' ? true : undefined,
      { timeoutMs: 60_000, what: 'the run cancelled' },
    )
    const rows = await sql<{ status: string; cancel_requested_at: Date | null }>`
      select status, cancel_requested_at from attempts
      where session_id = ${sessionId}
        and (parent_run_id is not null or parent_attempt_id is not null)
    `.execute(db)
    expect(rows.rows).toHaveLength(4)
    for (const row of rows.rows)
      expect(row).toEqual({ status: 'running', cancel_requested_at: null })
    // No cancel asked for, so no reason in the view.
    const [child] = await childrenOf(db, sessionId)
    expect(await client.getAttempt(child!.id)).not.toHaveProperty('cancelReason')
  }, 180_000)

  test('a cancel body with an unknown key is a typed 400, and a parent attempt that is no unfinished attempt of the session is a typed 409; nothing is written', async ({
    baton,
    db,
  }) => {
    const env = await hostedEnv(PROFILES, { helper: [{ kind: 'hang' }], lead: [{ kind: 'hang' }] })
    const { client, post } = await baton({ env, workers: 0 })
    const { sessionId } = await client.createSession({ profile: 'lead' })
    const run = await client.startRun(sessionId, { input: 'go' })
    const before = await sql`select * from runs where id = ${run.runId}::uuid`.execute(db)
    for (const body of [{ cascade: true, everything: true }, { cascade: 'yes' }]) {
      const answer = await post(`/v1/runs/${run.runId}/cancel`, body)
      expect(answer.status).toBe(400)
      expect(answer.body).toMatchObject({ error: { code: 'VALIDATION_FAILED' } })
    }
    expect((await sql`select * from runs where id = ${run.runId}::uuid`.execute(db)).rows).toEqual(
      before.rows,
    )
    const attempts = async () =>
      (await sql<{ n: number }>`select count(*)::int as n from attempts`.execute(db)).rows[0]?.n
    // An attempt of another session, not finished, is as unknown here as no attempt at all.
    const foreign = await client.delegate({ sessionId: 'elsewhere', name: 'helper', prompt: 'x' })
    const count = await attempts()
    for (const parentAttemptId of [randomUUID(), foreign.attemptId]) {
      const refused = await post(`/v1/sessions/${sessionId}/delegations`, {
        name: 'helper',
        prompt: 'orphan',
        parentAttemptId,
      })
      expect(refused.status).toBe(409)
      expect(refused.body).toMatchObject({ error: { code: 'PARENT_ATTEMPT_ENDED' } })
    }
    expect(await attempts()).toBe(count)
  }, 120_000)
})
