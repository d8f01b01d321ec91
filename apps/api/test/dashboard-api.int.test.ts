// The ledger dashboard's routes: behind the admin key, bounded views across namespaces, and one
// attempt's timeline with everything the ledger recorded for it.
import { randomUUID } from 'node:crypto'
import { sql } from 'kysely'
import {
  LEDGER_RETENTION_MS_DEFAULT,
  dashboardOverviewSchema,
  dashboardSessionSchema,
  dashboardSessionsSchema,
  dashboardTimelineSchema,
} from '@baton/contracts'
import { claimAttempt, commitTerminal } from '@baton/store'
import { DEMO_PROFILES_ENV, describe, expect, runDemoSession, tenantKey } from '@baton/testing'
import { apiTest, delegate, type ApiHarness } from './support/api-harness.ts'

const ADMIN_KEY = 'dashboard-admin-key-0123456789abcdefghij'
const basic = (password: string) => ({
  authorization: `Basic ${Buffer.from(`ops:${password}`).toString('base64')}`,
})

/** A test given an in-process API whose admin key is `ADMIN_KEY`, closed after it. */
const adminTest = apiTest.extend<{ api: ApiHarness }>({
  api: async ({ inProcessApi }, use) => use(await inProcessApi({ ADMIN_API_KEY: ADMIN_KEY })),
})

/** The overview, read with the admin key and held to its declared schema. */
async function overview(api: ApiHarness) {
  const answer = await api.get('/admin/api/overview', basic(ADMIN_KEY))
  expect(answer.status).toBe(200)
  return dashboardOverviewSchema.parse(answer.body)
}

/** An attempt's timeline, read with the admin key and held to its declared schema. */
async function timelineOf(api: ApiHarness, attemptId: string) {
  const answer = await api.get(`/admin/api/attempts/${attemptId}/timeline`, basic(ADMIN_KEY))
  expect(answer.status).toBe(200)
  const timeline = dashboardTimelineSchema.parse(answer.body)
  const entry = (kind: string) => {
    const found = timeline.entries.find((e) => e.kind === kind)
    if (found === undefined) throw new Error(`no ${kind} entry in the timeline`)
    return found
  }
  return { ...timeline, entry }
}

describe('ledger dashboard routes', () => {
  adminTest(
    'the page and its JSON answer 401 without the admin key and 200 with it',
    async ({ api }) => {
      const paths = ['/admin', '/admin/', '/admin/api/overview']
      for (const path of paths) {
        const none = await fetch(`${api.base}${path}`)
        expect(none.status, path).toBe(401)
        expect(none.headers.get('www-authenticate'), path).toMatch(/^Basic /)
        expect(await none.json(), path).toMatchObject({ error: { code: 'UNAUTHORIZED' } })
        // A tenant's key opens nothing here, nor does a wrong password.
        expect((await fetch(`${api.base}${path}`, { headers: api.auth })).status, path).toBe(401)
        expect((await fetch(`${api.base}${path}`, { headers: basic('wrong') })).status, path).toBe(
          401,
        )
        const ok = await fetch(`${api.base}${path}`, { headers: basic(ADMIN_KEY) })
        expect(ok.status, path).toBe(200)
        await ok.arrayBuffer()
        const bearer = await fetch(`${api.base}${path}`, {
          headers: { authorization: `Bearer ${ADMIN_KEY}` },
        })
        expect(bearer.status, path).toBe(200)
        await bearer.arrayBuffer()
      }
      const timeline = `/admin/api/attempts/${randomUUID()}/timeline`
      expect((await fetch(`${api.base}${timeline}`)).status).toBe(401)

      const page = await fetch(`${api.base}/admin`, { headers: basic(ADMIN_KEY) })
      expect(page.headers.get('content-type')).toMatch(/^text\/html/)
      expect(page.headers.get('content-security-policy')).toMatch(/script-src 'sha256-/)
      expect(await page.text()).toContain('<title>Baton ledger</title>')

      // The JSON routes are documented; the page is not.
      const docs = await api.get('/docs/json')
      expect(docs.status).toBe(200)
      expect(Object.keys(docs.body.paths)).toEqual(
        expect.arrayContaining([
          '/admin/api/overview',
          '/admin/api/attempts/{attemptId}/timeline',
          '/admin/api/sessions',
          '/admin/api/sessions/{namespaceId}/{sessionId}',
        ]),
      )
      expect(docs.body.paths['/admin']).toBeUndefined()
      expect(docs.body.paths['/admin/']).toBeUndefined()
    },
  )

  adminTest(
    'an unknown attempt is a 404 with the error body; a malformed id a 400',
    async ({ api }) => {
      const unknown = randomUUID()
      const missing = await api.get(`/admin/api/attempts/${unknown}/timeline`, basic(ADMIN_KEY))
      expect(missing).toEqual({
        status: 404,
        body: { error: { code: 'ATTEMPT_NOT_FOUND', message: `no attempt ${unknown}` } },
      })
      const malformed = await api.get('/admin/api/attempts/not-a-uuid/timeline', basic(ADMIN_KEY))
      expect(malformed).toMatchObject({
        status: 400,
        body: { error: { code: 'VALIDATION_FAILED' } },
      })
    },
  )

  adminTest(
    'overview and timeline show a steered, cancelled, terminal attempt across namespaces',
    async ({ api, db }) => {
      const admin = basic(ADMIN_KEY)
      // No worker runs here: this test is the worker, so every fact is the one it wrote.
      const accepted = await api.post(delegate('s-dash'), { name: 'scripted', prompt: 'x' })
      const attemptId = accepted.body.attemptId as string
      const otherKey = await tenantKey(db, 'dash-other')
      const queued = await api.post(
        delegate('s-dash-other'),
        { name: 'scripted', prompt: 'y' },
        { authorization: `Bearer ${otherKey}` },
      )
      expect(queued.status).toBe(202)

      const claim = await claimAttempt(db, { attemptId, ownerId: 'dash-owner', leaseTtlMs: 30_000 })
      if (claim.kind !== 'claimed') throw new Error(claim.kind)
      const running = await overview(api)
      expect(running.leases).toContainEqual(
        expect.objectContaining({
          attemptId,
          namespaceId: 'default',
          name: 'scripted',
          agentId: accepted.body.agentId,
          ownerId: 'dash-owner',
          ownerGeneration: claim.attempt.ownerGeneration,
        }),
      )
      const lease = running.leases.find((l) => l.attemptId === attemptId)
      const leftMs = Date.parse(lease?.leaseExpiresAt ?? '') - Date.parse(running.now)
      expect(leftMs).toBeGreaterThan(20_000)
      expect(leftMs).toBeLessThanOrEqual(30_000)
      expect(running.states.counts).toEqual(
        expect.arrayContaining([
          { namespaceId: 'default', status: 'running', stopReason: null, count: 1 },
          { namespaceId: 'dash-other', status: 'accepted', stopReason: null, count: 1 },
        ]),
      )
      expect(running.jobPathPrefix).toBe('/admin/queues/queue/attempts/')
      expect(running.terminals.map((t) => t.attemptId)).not.toContain(attemptId)

      const steer = await api.post(`/v1/attempts/${attemptId}/steer`, { content: 'turn left' })
      expect(steer.status).toBe(202)
      const cancel = await api.post(`/v1/attempts/${attemptId}/cancel`, { reason: 'operator said' })
      expect(cancel).toMatchObject({ status: 202, body: { outcome: 'cancel_requested' } })
      expect(
        await commitTerminal(db, {
          attemptId,
          ownerId: 'dash-owner',
          ownerGeneration: claim.attempt.ownerGeneration,
          result: { stopReason: 'aborted', output: 'partial', failureCategory: 'cancelled' },
        }),
      ).toBe('committed')
      const view = (await api.get(`/v1/attempts/${attemptId}`)).body

      const timeline = await timelineOf(api, attemptId)
      expect(timeline.attempt).toMatchObject({
        attemptId,
        namespaceId: 'default',
        status: 'terminal',
        stopReason: 'aborted',
        ownerId: 'dash-owner',
      })
      expect(timeline.jobPath).toBe(`/admin/queues/queue/attempts/${attemptId}`)
      // The queue dashboard answers that address with its page for the job.
      const job = await fetch(`${api.base}${timeline.jobPath}`, { headers: admin })
      expect(job.status).toBe(200)
      expect(job.headers.get('content-type')).toMatch(/^text\/html/)
      await job.arrayBuffer()
      const kinds = timeline.entries.map((e) =>
        e.kind === 'transition' ? `transition:${e.fields.event}` : e.kind,
      )
      expect(kinds).toEqual([
        'transition:accepted',
        'transition:claimed',
        'steering',
        'transition:cancel_requested',
        'cancel_requested',
        'transition:committed',
        'terminal',
      ])
      const entry = timeline.entry
      expect(entry('steering').fields).toMatchObject({ sequence: 1, content: 'turn left' })
      expect(entry('cancel_requested').fields).toEqual({ reason: 'operator said' })
      expect(entry('terminal').fields).toEqual({
        stopReason: 'aborted',
        failureCategory: 'cancelled',
        outputBytes: 7,
        outputTruncated: false,
        digest: view.digest,
      })

      const finished = await overview(api)
      expect(finished.leases.map((l) => l.attemptId)).not.toContain(attemptId)
      expect(finished.terminals[0]).toMatchObject({
        attemptId,
        namespaceId: 'default',
        stopReason: 'aborted',
        failureCategory: 'cancelled',
        outputBytes: 7,
      })
      expect(finished.terminals[0]?.durationMs).toBeGreaterThanOrEqual(0)
      expect(finished.states.counts).toEqual(
        expect.arrayContaining([
          { namespaceId: 'default', status: 'terminal', stopReason: 'aborted', count: 1 },
          { namespaceId: 'dash-other', status: 'accepted', stopReason: null, count: 1 },
        ]),
      )
      expect(
        finished.states.counts.filter((c) => c.namespaceId === 'default' && c.status === 'running'),
      ).toEqual([])

      // Cancelled while queued, an attempt is terminal without ever running: it leads the
      // recent terminals, with no duration.
      const queuedId = queued.body.attemptId as string
      const cancelQueued = await api.post(
        `/v1/attempts/${queuedId}/cancel`,
        {},
        { authorization: `Bearer ${otherKey}` },
      )
      expect(cancelQueued).toMatchObject({ status: 202, body: { outcome: 'cancelled_queued' } })
      const later = await overview(api)
      expect(later.terminals.slice(0, 2)).toEqual([
        expect.objectContaining({
          attemptId: queuedId,
          namespaceId: 'dash-other',
          stopReason: 'aborted',
          durationMs: null,
        }),
        expect.objectContaining({ attemptId }),
      ])
      expect(later.states.counts.filter((c) => c.namespaceId === 'dash-other')).toEqual([
        { namespaceId: 'dash-other', status: 'terminal', stopReason: 'aborted', count: 1 },
      ])
    },
  )

  adminTest(
    'a timeline shows the artifact of a large output and the continuation to its parent run',
    async ({ api, db }) => {
      const run = await api.post('/v1/sessions/s-dash-parent/runs', {})
      expect(run.status).toBe(201)
      const accepted = await api.post(delegate('s-dash-parent'), {
        name: 'scripted',
        prompt: 'x',
        parentRunId: run.body.runId,
      })
      const attemptId = accepted.body.attemptId as string
      const claim = await claimAttempt(db, { attemptId, ownerId: 'dash-owner', leaseTtlMs: 30_000 })
      if (claim.kind !== 'claimed') throw new Error(claim.kind)
      const output = 'é'.repeat(5000)
      expect(
        await commitTerminal(db, {
          attemptId,
          ownerId: 'dash-owner',
          ownerGeneration: claim.attempt.ownerGeneration,
          result: { stopReason: 'completed', output, failureCategory: null },
        }),
      ).toBe('committed')
      const view = (await api.get(`/v1/attempts/${attemptId}`)).body
      expect(view.artifact).not.toBeNull()
      // The parent run is still active: the result is held for it.
      const held = await timelineOf(api, attemptId)
      expect(held.attempt.parentRunId).toBe(run.body.runId)
      expect(held.entry('artifact').fields).toEqual({
        artifactId: view.artifact.artifactId,
        bytes: 10_000,
        digest: view.artifact.digest,
        expiresAt: view.artifact.expiresAt,
        expiredAt: null,
        expired: false,
      })
      expect(held.entry('terminal').fields).toMatchObject({
        stopReason: 'completed',
        outputBytes: 10_000,
        outputTruncated: true,
      })
      expect(held.entry('continuation').fields).toMatchObject({
        state: 'held',
        parentRunId: run.body.runId,
      })
    },
  )

  adminTest(
    'the overview shows, per namespace, what ledger retention removes next',
    async ({ api, db }) => {
      const accepted = await api.post(delegate('s-retention'), { name: 'scripted', prompt: 'x' })
      const attemptId = accepted.body.attemptId as string
      const claim = await claimAttempt(db, { attemptId, ownerId: 'w', leaseTtlMs: 30_000 })
      if (claim.kind !== 'claimed') throw new Error(claim.kind)
      const result = { stopReason: 'completed', output: 'ok', failureCategory: null }
      const ownerGeneration = claim.attempt.ownerGeneration
      expect(await commitTerminal(db, { attemptId, ownerId: 'w', ownerGeneration, result })).toBe(
        'committed',
      )
      const due = async () =>
        (await overview(api)).retention.find((r) => r.namespaceId === 'default')
      // Finished just now: nothing is older than the default retention.
      expect(await due()).toEqual({
        namespaceId: 'default',
        retentionMs: LEDGER_RETENTION_MS_DEFAULT,
        attempts: 0,
        runs: 0,
      })
      // A namespace's own retention of a minute, and an attempt that ended an hour ago.
      await sql`update namespaces set ledger_retention_ms = 60000 where id = 'default'`.execute(db)
      await sql`
        update attempts set terminal_at = terminal_at - interval '1 hour'
        where id = ${attemptId}::uuid`.execute(db)
      expect(await due()).toEqual({
        namespaceId: 'default',
        retentionMs: 60_000,
        attempts: 1,
        runs: 0,
      })
    },
  )

  apiTest(
    "the sessions view: a hosted session's runs in admission order, the user run's two children and the continuation run each child's result caused",
    { timeout: 120_000 },
    async ({ baton, db }) => {
      // A real API and worker on the demo profile: the parent delegates to two researchers and
      // ends its turn; each researcher's result comes back as a continuation run.
      const stack = await baton({ env: DEMO_PROFILES_ENV, apiEnv: { ADMIN_API_KEY: ADMIN_KEY } })
      const { sessionId, userRunId } = await runDemoSession(stack.client, db)
      const admin = basic(ADMIN_KEY)

      const listed = await stack.get('/admin/api/sessions', admin)
      expect(listed.status).toBe(200)
      const sessions = dashboardSessionsSchema.parse(listed.body)
      expect(sessions.sessions).toContainEqual(
        expect.objectContaining({ namespaceId: 'default', sessionId, profile: 'demo' }),
      )

      const answer = await stack.get(`/admin/api/sessions/default/${sessionId}`, admin)
      expect(answer.status).toBe(200)
      // Held to its declared schema, and no key beyond it.
      const view = dashboardSessionSchema.strict().parse(answer.body)
      const parent = await sql<{ parent_agent_id: string }>`
        select parent_agent_id from sessions where id = ${sessionId}`.execute(db)
      expect(view.session).toEqual({
        namespaceId: 'default',
        sessionId,
        profile: 'demo',
        parentAgentId: parent.rows[0]?.parent_agent_id,
        createdAt: expect.any(String),
        deletedAt: null,
      })
      expect(view.earlierRuns).toBe(false)
      // The runs in the order the ledger admitted them.
      const ledgerOrder = await sql<{ id: string }>`
        select id from runs where session_id = ${sessionId} order by admission_seq`.execute(db)
      expect(view.runs.map((r) => r.runId)).toEqual(ledgerOrder.rows.map((r) => r.id))
      expect(view.runs.map((r) => [r.triggerType, r.status, r.hosted])).toEqual([
        ['user', 'completed', true],
        ['async_subagent_result', 'completed', true],
        ['async_subagent_result', 'completed', true],
      ])
      const [user, ...continuations] = view.runs
      if (user === undefined) throw new Error('no user run')
      expect(user.runId).toBe(userRunId)
      expect(user.cause).toBeNull()
      expect(user.childrenTruncated).toBe(false)
      expect(user.children).toHaveLength(2)
      for (const child of user.children) {
        expect(child).toEqual({
          attemptId: expect.any(String),
          agentId: expect.any(String),
          name: 'researcher',
          status: 'terminal',
          stopReason: 'completed',
          failureCategory: null,
          acceptedAt: expect.any(String),
          terminalAt: expect.any(String),
        })
      }
      const childIds = user.children.map((c) => c.attemptId)
      expect(new Set(user.children.map((c) => c.agentId)).size).toBe(2)
      const ledgerChildren = await sql<{ id: string; agent_id: string }>`
        select id, agent_id from attempts where parent_run_id = ${userRunId}::uuid
        order by created_at, id`.execute(db)
      expect(user.children.map((c) => [c.attemptId, c.agentId])).toEqual(
        ledgerChildren.rows.map((r) => [r.id, r.agent_id]),
      )
      // Each continuation carries one child's result, each child's once; they delegated nothing.
      expect(continuations.map((r) => r.cause?.attemptId).sort()).toEqual([...childIds].sort())
      for (const run of continuations) {
        const child = user.children.find((c) => c.attemptId === run.cause?.attemptId)
        expect(run.cause).toEqual({
          attemptId: child?.attemptId,
          agentId: child?.agentId,
          name: 'researcher',
        })
        expect(run.children).toEqual([])
      }
      // One run at a time: each started after the one before it ended.
      const ms = (t: string | null) => Date.parse(t ?? '')
      for (const [i, run] of view.runs.entries()) {
        expect(ms(run.createdAt)).toBeLessThanOrEqual(ms(run.startedAt))
        expect(ms(run.startedAt)).toBeLessThanOrEqual(ms(run.endedAt))
        const before = view.runs[i - 1]
        if (before !== undefined)
          expect(ms(run.startedAt)).toBeGreaterThanOrEqual(ms(before.endedAt))
      }

      // Unknown and foreign-looking addresses: typed refusals; the key is the admin's only.
      expect(await stack.get(`/admin/api/sessions/other-ns/${sessionId}`, admin)).toEqual({
        status: 404,
        body: {
          error: {
            code: 'SESSION_NOT_FOUND',
            message: `no session ${sessionId} in namespace other-ns`,
          },
        },
      })
      expect(
        await stack.get(`/admin/api/sessions/default/${encodeURIComponent('a b')}`, admin),
      ).toMatchObject({ status: 400, body: { error: { code: 'VALIDATION_FAILED' } } })
      expect((await stack.get(`/admin/api/sessions/default/${sessionId}`)).status).toBe(401)
      expect((await stack.get('/admin/api/sessions')).status).toBe(401)
    },
  )
})
