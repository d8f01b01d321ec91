// Hosted parents end to end: sessions on a profile, runs executed by the worker fleet (API and
// workers as real processes), one conversation continued across runs.
import { execFile } from 'node:child_process'
import { mkdtemp, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { sql } from 'kysely'
import { REPO_ROOT } from '@baton/testing/processes'
import { BatonApiError } from '@baton/client'
import type { Db } from '@baton/store'
import { describe, eventually, expect, test } from '@baton/testing'
import { RECALLING_PARENT, hostedEnv } from './support/hosted-profiles.ts'

async function counts(db: Db) {
  const row = await sql<{ sessions: number; runs: number; attempts: number; agents: number }>`
    select (select count(*) from sessions)::int as sessions, (select count(*) from runs)::int as runs,
           (select count(*) from attempts)::int as attempts, (select count(*) from agents)::int as agents
  `.execute(db)
  return row.rows[0]
}

async function refusal(call: Promise<unknown>) {
  const error = await call.then(
    () => undefined,
    (e: unknown) => e,
  )
  expect(error).toBeInstanceOf(BatonApiError)
  const api = error as BatonApiError
  return { status: api.status, code: api.code }
}

describe('hosted sessions and runs', () => {
  test('a session on a profile: created, read; an unknown profile or session is a typed 4xx with nothing written', async ({
    baton,
    db,
  }) => {
    const env = await hostedEnv(RECALLING_PARENT, { recall: [{ kind: 'recall' }] })
    const { client } = await baton({ env })
    const before = await counts(db)
    expect(await refusal(client.createSession({ profile: 'nope' }))).toEqual({
      status: 400,
      code: 'UNKNOWN_PROFILE',
    })
    expect(await counts(db)).toEqual(before)

    const session = await client.createSession({ profile: 'recall', metadata: { traceId: 't-1' } })
    expect(session).toMatchObject({
      profile: 'recall',
      metadata: { traceId: 't-1' },
      deletedAt: null,
    })
    expect(await client.getSession(session.sessionId)).toEqual(session)
    expect(await refusal(client.getSession('no-such-session'))).toEqual({
      status: 404,
      code: 'SESSION_NOT_FOUND',
    })
    // A host run on a hosted session, and a hosted run on a host-managed one, are refused.
    const afterCreate = await counts(db)
    expect(await refusal(client.createRun(session.sessionId))).toEqual({
      status: 409,
      code: 'SESSION_NOT_HOSTED',
    })
    await client.createRun('host-managed')
    const withHostRun = await counts(db)
    expect(await refusal(client.startRun('host-managed', { input: 'hello' }))).toEqual({
      status: 409,
      code: 'SESSION_NOT_HOSTED',
    })
    expect(await refusal(client.startRun('no-such-session', { input: 'hello' }))).toEqual({
      status: 404,
      code: 'SESSION_NOT_FOUND',
    })
    expect(await counts(db)).toEqual(withHostRun)
    expect(withHostRun?.runs).toBe((afterCreate?.runs ?? 0) + 1)
  }, 120_000)

  test('runs of a hosted session execute on the fleet one after another and continue one conversation', async ({
    baton,
    db,
  }) => {
    const env = await hostedEnv(RECALLING_PARENT, { recall: [{ kind: 'recall', delayMs: 700 }] })
    const { client } = await baton({ env })
    const { sessionId } = await client.createSession({ profile: 'recall' })

    // Queued at once: they start one at a time, in admission order.
    const first = await client.startRun(sessionId, { input: 'first question' })
    const second = await client.startRun(sessionId, { input: 'second question' })
    const third = await client.startRun(sessionId, { input: 'third question' })
    expect(first).toMatchObject({ hosted: true, triggerType: 'user' })
    const ended = await eventually(
      async () => {
        const view = await client.waitRun(third.runId, 5000)
        return view.status === 'completed' ? view : undefined
      },
      { timeoutMs: 60_000, what: 'the third run to end' },
    )
    expect(ended.output).toBe('first question\nsecond question\nthird question')
    expect(await client.getRun(first.runId)).toMatchObject({
      status: 'completed',
      output: 'first question',
    })
    expect((await client.getRun(second.runId)).output).toBe('first question\nsecond question')

    // One active run at a time: each run started after the one before it ended.
    const runs = await sql<{ id: string; started_at: Date; terminal_at: Date }>`
      select r.id, a.started_at, a.terminal_at from runs r join attempts a on a.id = r.id
      where r.session_id = ${sessionId} order by r.admission_seq
    `.execute(db)
    expect(runs.rows.map((r) => r.id)).toEqual([first.runId, second.runId, third.runId])
    for (let i = 1; i < runs.rows.length; i += 1)
      expect(runs.rows[i]!.started_at.getTime()).toBeGreaterThanOrEqual(
        runs.rows[i - 1]!.terminal_at.getTime(),
      )
  }, 120_000)

  test('a queued run cancelled before it starts ends cancelled and never runs; a bounded wait answers the run as it is at its bound', async ({
    baton,
  }) => {
    const env = await hostedEnv(RECALLING_PARENT, {
      recall: [{ kind: 'hang', text: 'thinking' }],
    })
    const { client } = await baton({ env })
    const { sessionId } = await client.createSession({ profile: 'recall' })
    const first = await client.startRun(sessionId, { input: 'hang on' })
    const second = await client.startRun(sessionId, { input: 'queued' })
    const snapshot = await client.waitRun(second.runId, 200)
    expect(snapshot.status).toBe('pending')
    expect((await client.cancelRun(second.runId)).status).toBe('cancelled')
    await eventually(
      async () => ((await client.getRun(first.runId)).status === 'active' ? true : undefined),
      { timeoutMs: 30_000, what: 'the first run to be active' },
    )
    expect((await client.cancelRun(first.runId)).runId).toBe(first.runId)
    const cancelled = await eventually(
      async () => {
        const view = await client.waitRun(first.runId, 5000)
        return view.status === 'cancelled' ? view : undefined
      },
      { timeoutMs: 30_000, what: 'the first run to be cancelled' },
    )
    expect(cancelled.output).toBeNull()
    expect((await client.getRun(second.runId)).status).toBe('cancelled')
  }, 120_000)

  test.each([
    ['api', 'apps/api/src/main.ts'],
    ['worker', 'apps/worker/src/main.ts'],
  ])(
    'the %s refuses to start on a malformed profiles file, naming its line and problem',
    async (_, main) => {
      const dir = await mkdtemp(join(tmpdir(), 'baton-bad-profiles-'))
      const file = join(dir, 'profiles.toml')
      await writeFile(file, '[profiles.lead]\nmodel_id = "scripted:lead"\nsubagents = ["ghost"]\n')
      const started = await promisify(execFile)(process.execPath, [join(REPO_ROOT, main)], {
        env: { ...process.env, PROFILES_FILE: file, LOG_LEVEL: 'error' },
        timeout: 60_000,
      }).then(
        () => ({ code: 0, stderr: '' }),
        (error: { code?: number; stderr?: string; stdout?: string }) => ({
          code: error.code ?? -1,
          stderr: `${error.stderr ?? ''}${error.stdout ?? ''}`,
        }),
      )
      expect(started.code).not.toBe(0)
      expect(started.stderr).toContain(`${file}:3: profile "lead": unknown subagent "ghost"`)
    },
    90_000,
  )
})
