import { randomUUID } from 'node:crypto'
import { createBatonClient } from '@baton/client'
import { describe, expect, tenantKey } from '@baton/testing'
import { apiTest as baseTest, delegate, rowCounts, type ApiHarness } from './support/api-harness.ts'

const ADMIN_KEY = 'admin-key-for-tests-0123456789abcdef0123456789'

/** An API with an admin key; `h` acts as namespace `default`. */
const apiTest = baseTest.extend<{ adminApi: ApiHarness }>({
  adminApi: async ({ inProcessApi }, use) => use(await inProcessApi({ ADMIN_API_KEY: ADMIN_KEY })),
})

const bearer = (key: string) => ({ authorization: `Bearer ${key}` })

async function deleteSession(
  h: ApiHarness,
  sessionId: string,
  headers: Record<string, string>,
): Promise<{ status: number; body: unknown }> {
  const response = await fetch(`${h.base}/v1/sessions/${sessionId}`, { method: 'DELETE', headers })
  return { status: response.status, body: await response.json() }
}

/** The same request's answer with every occurrence of `from` written as `to`. */
function renamed(body: unknown, from: string, to: string): unknown {
  return JSON.parse(JSON.stringify(body).replaceAll(from, to))
}

describe('namespaces: isolation on every route', () => {
  apiTest(
    "a key of namespace B finds nothing of namespace A: every route answers 404 exactly as for a missing id, and A's objects are unchanged",
    async ({ adminApi: h, db }) => {
      // Namespace A is `default` (the harness key); B gets a key of its own.
      const b = bearer(await tenantKey(db, 'tenant-b'))
      const a = await h.post(delegate('shared-session'), {
        name: 'scripted',
        prompt: '{"hang":true}',
      })
      expect(a.status).toBe(202)
      const { attemptId, agentId } = a.body as { attemptId: string; agentId: string }
      const run = await h.post('/v1/sessions/shared-session/runs', {})
      expect(run.status).toBe(201)
      const runId = run.body.runId as string
      const missingAttempt = randomUUID()
      const missingAgent = randomUUID()
      const missingRun = randomUUID()
      const before = await rowCounts(db)
      const fence = { claimToken: randomUUID(), generation: 1 }

      // Each probe: the request on A's object with B's key, and the same request on a missing id.
      const probes: {
        what: string
        run(id: string): Promise<{ status: number; body: unknown }>
        real: string
        missing: string
      }[] = [
        {
          what: 'read',
          run: (id) => h.get(`/v1/attempts/${id}`, b),
          real: attemptId,
          missing: missingAttempt,
        },
        {
          what: 'wait',
          run: (id) => h.get(`/v1/attempts/${id}/wait?timeoutMs=50`, b),
          real: attemptId,
          missing: missingAttempt,
        },
        {
          what: 'cancel',
          run: (id) => h.post(`/v1/attempts/${id}/cancel`, { reason: 'not yours' }, b),
          real: attemptId,
          missing: missingAttempt,
        },
        {
          what: 'steer',
          run: (id) => h.post(`/v1/attempts/${id}/steer`, { content: 'turn left' }, b),
          real: attemptId,
          missing: missingAttempt,
        },
        {
          what: 'context',
          run: (id) => h.get(`/v1/agents/${id}/context`, b),
          real: agentId,
          missing: missingAgent,
        },
        {
          what: 'continue',
          run: (id) =>
            h.post(delegate('shared-session'), { name: 'scripted', prompt: 'x', agentId: id }, b),
          real: agentId,
          missing: missingAgent,
        },
        { what: 'run', run: (id) => h.get(`/v1/runs/${id}`, b), real: runId, missing: missingRun },
        ...(['complete', 'fail', 'cancel'] as const).map((verb) => ({
          what: `run ${verb}`,
          run: (id: string) => h.post(`/v1/runs/${id}/${verb}`, {}, b),
          real: runId,
          missing: missingRun,
        })),
        ...(['heartbeat', 'complete', 'fail'] as const).map((verb) => ({
          what: `continuation ${verb}`,
          run: (id: string) =>
            h.post(
              `/v1/continuations/${id}/${verb}`,
              verb === 'heartbeat' ? { ...fence, leaseMs: 5000 } : fence,
              b,
            ),
          real: runId,
          missing: missingRun,
        })),
        {
          what: 'session delete',
          run: (id) => deleteSession(h, id, b),
          real: 'shared-session',
          missing: 'no-such-session',
        },
      ]
      for (const probe of probes) {
        const foreign = await probe.run(probe.real)
        const missing = await probe.run(probe.missing)
        expect(foreign.status, probe.what).toBe(404)
        expect(missing.status, probe.what).toBe(404)
        expect(renamed(foreign.body, probe.real, probe.missing), probe.what).toEqual(missing.body)
      }
      // A batch item continuing A's agent is refused alone, like a missing agent.
      const batch = await h.post(
        `${delegate('shared-session')}/batch`,
        { items: [{ name: 'scripted', prompt: 'x', agentId }] },
        b,
      )
      expect(batch.body.results[0]).toMatchObject({
        status: 404,
        body: { error: { code: 'AGENT_NOT_FOUND' } },
      })
      // B claiming from a session id A uses finds nothing of A's.
      const claim = await fetch(`${h.base}/v1/sessions/shared-session/continuations/claim`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...b },
        body: JSON.stringify({ timeoutMs: 0, leaseMs: 5000 }),
      })
      expect(claim.status).toBe(204)
      // Nothing of A changed: no cancel, no steering, no settled run, no attempt of B on A's agent.
      expect(await rowCounts(db)).toEqual(before)
      expect(await h.get(`/v1/attempts/${attemptId}`)).toMatchObject({
        status: 200,
        body: { status: 'accepted', cancelRequested: false, steering: { accepted: 0 } },
      })
      expect(await h.get(`/v1/runs/${runId}`)).toMatchObject({
        status: 200,
        body: { status: 'active' },
      })

      // Session ids and idempotency keys are per namespace: B's first use of A's session id and
      // key is a new delegation of its own.
      const keyed = { 'idempotency-key': 'same-key' }
      const inA = await h.post(delegate('shared-session'), { name: 'scripted', prompt: 'p' }, keyed)
      const inB = await h.post(
        delegate('shared-session'),
        { name: 'scripted', prompt: 'p' },
        { ...keyed, ...b },
      )
      expect([inA.status, inB.status]).toEqual([202, 202])
      expect(inB.body.attemptId).not.toBe(inA.body.attemptId)
      expect((await h.get(`/v1/attempts/${inB.body.attemptId}`, b)).status).toBe(200)
      expect((await h.get(`/v1/attempts/${inB.body.attemptId}`)).status).toBe(404)
    },
  )

  apiTest(
    'no key, a malformed or unknown key, a revoked key and the admin key answer 401 on tenant routes; tenant keys answer 401 on admin routes',
    async ({ adminApi: h, db }) => {
      const admin = createBatonClient({ baseUrl: h.base, apiKey: ADMIN_KEY }).admin
      await admin.createNamespace('revoking')
      const issued = await admin.issueKey('revoking', 'short-lived')
      expect(issued.key).toMatch(/^bk_[A-Za-z0-9_-]{43}$/)
      const accepted = await h.post(
        delegate('s-auth'),
        { name: 'scripted', prompt: 'x' },
        bearer(issued.key),
      )
      expect(accepted.status).toBe(202)
      const listed = await admin.listKeys('revoking')
      expect(listed.keys).toEqual([
        expect.objectContaining({ keyId: issued.keyId, revokedAt: null }),
      ])
      expect(JSON.stringify(listed)).not.toContain(issued.key)
      expect(listed.keys[0]?.prefix).toBe(issued.key.slice(0, 11))
      await admin.revokeKey(issued.keyId)

      const before = await rowCounts(db)
      const tenantRoutes = [
        (headers: Record<string, string>) =>
          h.post(delegate('s-auth'), { name: 'scripted', prompt: 'x' }, headers),
        (headers: Record<string, string>) =>
          h.get(`/v1/attempts/${accepted.body.attemptId}`, headers),
        (headers: Record<string, string>) =>
          h.post(`/v1/attempts/${accepted.body.attemptId}/cancel`, {}, headers),
        (headers: Record<string, string>) => h.get('/docs/json', headers),
        (headers: Record<string, string>) => h.get('/v2/nothing', headers),
      ]
      const refusedKeys: Record<string, Record<string, string>> = {
        none: { authorization: '' },
        'wrong scheme': { authorization: `Basic ${h.key}` },
        malformed: bearer('not-a-key'),
        unknown: bearer(`bk_${'A'.repeat(43)}`),
        revoked: bearer(issued.key),
        admin: bearer(ADMIN_KEY),
      }
      for (const [what, headers] of Object.entries(refusedKeys)) {
        for (const route of tenantRoutes) {
          const answer = await route(headers)
          expect(answer, what).toMatchObject({
            status: 401,
            body: { error: { code: 'UNAUTHORIZED' } },
          })
        }
      }
      for (const headers of [{ authorization: '' }, bearer(h.key), bearer(`${ADMIN_KEY}x`)]) {
        expect(await h.get('/v1/admin/namespaces', headers)).toMatchObject({
          status: 401,
          body: { error: { code: 'UNAUTHORIZED' } },
        })
        expect((await h.get('/admin/queues', headers)).status).toBe(401)
      }
      // A browser opens the dashboard with Basic credentials: any user, the admin key as password.
      const basic = (password: string) => ({
        authorization: `Basic ${Buffer.from(`admin:${password}`).toString('base64')}`,
      })
      const challenged = await fetch(`${h.base}/admin/queues`)
      expect(challenged.status).toBe(401)
      expect(challenged.headers.get('www-authenticate')).toMatch(/^Basic /)
      expect((await fetch(`${h.base}/admin/queues`, { headers: basic('wrong') })).status).toBe(401)
      expect((await fetch(`${h.base}/admin/queues`, { headers: basic(ADMIN_KEY) })).status).toBe(
        200,
      )
      expect((await h.get('/v1/admin/namespaces', bearer(ADMIN_KEY))).status).toBe(200)
      expect(await rowCounts(db)).toEqual(before)
      // The probes stay open.
      expect((await h.get('/healthz', { authorization: '' })).status).toBe(200)
      // Revoking is idempotent, and an unknown key id is a typed 404.
      expect((await admin.revokeKey(issued.keyId)).revokedAt).not.toBeNull()
      await expect(admin.revokeKey(randomUUID())).rejects.toMatchObject({
        status: 404,
        code: 'API_KEY_NOT_FOUND',
      })
      await expect(admin.createNamespace('revoking')).rejects.toMatchObject({
        status: 409,
        code: 'NAMESPACE_EXISTS',
      })
      await expect(admin.issueKey('nobody-here', 'k')).rejects.toMatchObject({
        status: 404,
        code: 'NAMESPACE_NOT_FOUND',
      })
    },
  )

  apiTest('without ADMIN_API_KEY the admin routes are closed to everyone', async ({ api: h }) => {
    for (const headers of [{ authorization: '' }, bearer(h.key)]) {
      expect(await h.get('/v1/admin/namespaces', headers)).toMatchObject({
        status: 401,
        body: {
          error: { code: 'UNAUTHORIZED', message: expect.stringContaining('ADMIN_API_KEY') },
        },
      })
    }
  })
})
