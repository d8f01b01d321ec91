// `Idempotency-Key` on hosted runs (`POST /v1/sessions/:sessionId/runs` with `input`): a client that
// retries after a cut connection gets the run its first request queued, never a second user run;
// the key with another request is the typed conflict delegations answer, with nothing written.
import { sql } from 'kysely'
import type { Db } from '@baton/store'
import { describe, eventually, expect, test } from '@baton/testing'
import { RECALLING_PARENT, hostedEnv } from './support/hosted-profiles.ts'

const runsOf = (sessionId: string) => `/v1/sessions/${sessionId}/runs`

/** What a refused request must not have written: runs, attempts and session events. */
async function written(db: Db) {
  const r = await sql<{ runs: number; attempts: number; events: number }>`
    select (select count(*)::int from runs) as runs,
           (select count(*)::int from attempts) as attempts,
           (select count(*)::int from session_events) as events
  `.execute(db)
  return r.rows[0]
}

describe('Idempotency-Key on hosted runs', () => {
  test('the same key and input, four times at once and again later, is one run; another input under the key is 409 IDEMPOTENCY_KEY_REUSED with nothing written', async ({
    baton,
    db,
  }) => {
    const env = await hostedEnv(RECALLING_PARENT, { recall: [{ kind: 'recall' }] })
    // No worker yet: the run stays queued while its retries arrive.
    const h = await baton({ env, workers: 0 })
    const { sessionId } = await h.client.createSession({ profile: 'recall' })
    const key = { 'idempotency-key': 'turn-1' }
    const body = { input: 'first question' }

    const answers = await Promise.all([1, 2, 3, 4].map(() => h.post(runsOf(sessionId), body, key)))
    expect(answers.map((a) => a.status)).toEqual([201, 201, 201, 201])
    const runIds = new Set(answers.map((a) => a.body.runId as string))
    expect(runIds.size).toBe(1)
    const [runId] = [...runIds]
    expect(answers[0]?.body).toMatchObject({ hosted: true, triggerType: 'user', status: 'pending' })
    const runs = await sql<{ id: string }>`
      select id from runs where session_id = ${sessionId}
    `.execute(db)
    expect(runs.rows.map((r) => r.id)).toEqual([runId])

    // The key with another input: refused, nothing written.
    const before = await written(db)
    const reused = await h.post(runsOf(sessionId), { input: 'another question' }, key)
    expect(reused).toMatchObject({
      status: 409,
      body: { error: { code: 'IDEMPOTENCY_KEY_REUSED' } },
    })
    expect(await written(db)).toEqual(before)
    // A malformed key is bad input; a host run takes no key; both write nothing.
    const bad = await h.post(runsOf(sessionId), body, { 'idempotency-key': 'no spaces' })
    expect(bad).toMatchObject({ status: 400, body: { error: { code: 'VALIDATION_FAILED' } } })
    const hostRun = await h.post(runsOf('host-managed'), {}, key)
    expect(hostRun).toMatchObject({ status: 400, body: { error: { code: 'VALIDATION_FAILED' } } })
    expect(await written(db)).toEqual(before)
    // Keys are per session.
    const other = await h.client.createSession({ profile: 'recall' })
    const elsewhere = await h.post(runsOf(other.sessionId), body, key)
    expect(elsewhere.status).toBe(201)
    expect(elsewhere.body.runId).not.toBe(runId)

    // Once the run ended, a retried submit-and-wait answers it, ended, at once.
    await h.startWorker()
    await eventually(
      async () =>
        (await h.client.waitRun(runId!, 5000)).status === 'completed' ? true : undefined,
      { timeoutMs: 60_000, what: 'the keyed run to complete' },
    )
    const retried = await h.post(runsOf(sessionId), { ...body, wait: 5000 }, key)
    expect(retried).toMatchObject({
      status: 201,
      body: { runId, status: 'completed', output: 'first question' },
    })
    // The conversation holds the turn once: the next run recalls one "first question".
    const next = await h.client.startRun(sessionId, { input: 'second question', wait: 30_000 })
    expect(next).toMatchObject({ status: 'completed', output: 'first question\nsecond question' })
    const total = await sql<{ n: number }>`
      select count(*)::int as n from runs where session_id = ${sessionId}
    `.execute(db)
    expect(total.rows[0]?.n).toBe(2)
  }, 120_000)
})
