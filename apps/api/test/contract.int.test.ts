// The OpenAPI contract, held to the real API: every documented operation is called, its successes
// and every refusal it can reach, and each answer (status, content type, headers, body) is checked
// against the served document with ajv. An answer whose status the document does not list fails.
import { randomUUID } from 'node:crypto'
import { sql } from 'kysely'
import { createLogger } from '@baton/observability'
import type { Db } from '@baton/store'
import { describe, eventually, expect, test } from '@baton/testing'
import { composeApi } from '../src/compose.ts'
import { loadConfig } from '../src/config.ts'
import {
  createContractChecker,
  type ContractChecker,
  type OpenApiDoc,
  type Operation,
} from './support/openapi-contract.ts'
import { apiTest } from './support/api-harness.ts'
import { RECALLING_PARENT, hostedEnv } from './support/hosted-profiles.ts'

const ADMIN_KEY = `admin-${'k'.repeat(40)}`
const NO_SUCH_ID = '00000000-0000-4000-8000-000000000000'

interface Answer {
  readonly status: number
  readonly body: any
  readonly headers: Headers
}

interface CallOptions {
  readonly key?: string
  readonly body?: unknown
  /** A body sent as is, with this content type. */
  readonly raw?: { readonly text: string; readonly type: string }
  readonly headers?: Record<string, string>
}

/** Calls the API and holds the answer to the document (the call fails the test otherwise). */
function caller(checker: ContractChecker, base: string) {
  return async (method: string, path: string, options: CallOptions = {}): Promise<Answer> => {
    const headers: Record<string, string> = { ...options.headers }
    if (options.key !== undefined) headers.authorization = `Bearer ${options.key}`
    let body: string | undefined
    if (options.raw !== undefined) {
      headers['content-type'] = options.raw.type
      body = options.raw.text
    } else if (options.body !== undefined) {
      headers['content-type'] = 'application/json'
      body = JSON.stringify(options.body)
    }
    const response = await fetch(`${base}${path}`, {
      method,
      headers,
      ...(body === undefined ? {} : { body }),
    })
    const text = await response.text()
    checker.check(checker.operationOf(method, path), {
      status: response.status,
      headers: response.headers,
      text,
    })
    const json = response.headers.get('content-type')?.startsWith('application/json') === true
    return {
      status: response.status,
      body: json && text !== '' ? JSON.parse(text) : text,
      headers: response.headers,
    }
  }
}

type Call = ReturnType<typeof caller>

/** The answer's status and, for an error, its code. */
function outcome(answer: Answer): string {
  return answer.body?.error?.code === undefined
    ? String(answer.status)
    : `${answer.status} ${answer.body.error.code}`
}

/** A concrete URL of an operation: every path parameter replaced by `value`. */
function urlOf(op: Operation, value: (name: string) => string): string {
  return op.path.replaceAll(/\{([^}]+)\}/g, (_, name: string) => value(name))
}

const VALID_PARAM: Readonly<Record<string, string>> = {
  sessionId: 'contract-probe',
  namespaceId: 'no-such-namespace',
}
const INVALID_PARAM: Readonly<Record<string, string>> = {
  sessionId: 'bad%20id',
  namespaceId: 'Bad',
}

const isAdmin = (op: Operation) => op.path.startsWith('/v1/admin/') || op.path.startsWith('/admin/')
const isTenant = (op: Operation) =>
  !isAdmin(op) && (op.doc.security === undefined || op.doc.security.length > 0)

/**
 * Statuses the document lists that no test can provoke on a healthy deployment: `503 NOT_READY`
 * (the ledger failing mid-request) and `500 INTERNAL` (a broken invariant). `/readyz`'s 503 and the
 * artifact route's `500 ARTIFACT_INTEGRITY` are reachable and are exercised.
 */
function unreachable(operation: string, status: number): boolean {
  if (status === 503) return operation !== 'GET /readyz'
  if (status === 500) return operation !== 'GET /v1/artifacts/{artifactId}'
  return false
}

describe('the OpenAPI document is the contract', () => {
  test(
    'every documented operation answers only documented statuses, bodies, content types and headers; every operation and every reachable status is exercised',
    { timeout: 180_000 },
    async ({ services: ctx, baton, db }) => {
      const hostedEnvironment = await hostedEnv(RECALLING_PARENT, { recall: [{ kind: 'recall' }] })
      const harness = await baton({
        apiEnv: { ADMIN_API_KEY: ADMIN_KEY },
        env: hostedEnvironment,
      })
      const limited = await baton({
        workers: 0,
        apiEnv: { RATE_LIMIT_MAX: '1', RATE_LIMIT_WINDOW_MS: '60000' },
      })

      const docs = await fetch(`${harness.base}/docs/json`, { headers: harness.auth })
      expect(docs.status).toBe(200)
      const doc = (await docs.json()) as OpenApiDoc
      expect(doc.openapi).toBe('3.1.0')
      const checker = createContractChecker(doc)
      const call = caller(checker, harness.base)
      const key = harness.key

      await genericRefusals(checker, call, key)
      await rateLimits(checker, caller(checker, limited.base), limited.key)
      await delegationsAndAttempts(call, key)
      await runsAndContinuations(call, key)
      await hostedSessions(call, key)
      await artifacts(call, key, db)
      await administration(call)
      await webhooks(call, key)
      await dashboard(call, db)
      await health(call)
      await readinessOfAnUnmigratedDatabase(checker, { ...ctx, db })

      expect(checker.unexercised()).toEqual([])
      const missing = checker
        .unseen()
        .map((u) => ({
          ...u,
          statuses: u.statuses.filter((status) => !unreachable(u.operation, status)),
        }))
        .filter((u) => u.statuses.length > 0)
      expect(missing).toEqual([])
    },
  )

  apiTest(
    'an answer with a status the document does not list fails the check',
    async ({ api: h }) => {
      const doc = (await (
        await fetch(`${h.base}/docs/json`, { headers: h.auth })
      ).json()) as OpenApiDoc
      const checker = createContractChecker(doc)
      const op = checker.operationOf('GET', `/v1/attempts/${NO_SUCH_ID}`)
      const json = new Headers({ 'content-type': 'application/json; charset=utf-8' })
      const notFound = JSON.stringify({ error: { code: 'ATTEMPT_NOT_FOUND', message: 'no' } })
      expect(() => checker.check(op, { status: 404, headers: json, text: notFound })).not.toThrow()
      expect(() => checker.check(op, { status: 418, headers: json, text: notFound })).toThrow(
        /status not documented/,
      )
      // A documented status with a code the route does not give there, or another content type.
      const wrongCode = JSON.stringify({ error: { code: 'RUN_NOT_FOUND', message: 'no' } })
      expect(() => checker.check(op, { status: 404, headers: json, text: wrongCode })).toThrow(
        /does not match/,
      )
      const html = new Headers({ 'content-type': 'text/html' })
      expect(() => checker.check(op, { status: 404, headers: html, text: notFound })).toThrow(
        /content-type/,
      )
    },
  )
})

/**
 * What every operation refuses the same way, probed on each one the document lists: no key, a
 * bad key, a malformed or overlong path parameter, and for a body a non-JSON, an oversize and a
 * malformed one.
 */
async function genericRefusals(checker: ContractChecker, call: Call, key: string): Promise<void> {
  for (const op of checker.operations) {
    const where = `${op.method} ${op.path}`
    const secured = isTenant(op) || isAdmin(op)
    const credential = isAdmin(op) ? ADMIN_KEY : key
    const url = urlOf(op, (name) => VALID_PARAM[name] ?? NO_SUCH_ID)
    const send = (options: CallOptions) =>
      call(op.method, url, {
        ...(op.doc.requestBody === undefined ? {} : { body: {} }),
        ...options,
      })
    if (secured) {
      expect(outcome(await send({})), where).toBe('401 UNAUTHORIZED')
      expect(outcome(await send({ key: 'bk_not-a-key' })), where).toBe('401 UNAUTHORIZED')
      const wrongKind = isAdmin(op) ? key : ADMIN_KEY
      expect(outcome(await send({ key: wrongKind })), where).toBe('401 UNAUTHORIZED')
    }
    if (op.path.includes('{')) {
      const invalid = urlOf(op, (name) => INVALID_PARAM[name] ?? 'not-a-uuid')
      const answer = await call(op.method, invalid, {
        key: credential,
        ...(op.doc.requestBody === undefined ? {} : { body: {} }),
      })
      expect(outcome(answer), where).toBe('400 VALIDATION_FAILED')
      const overlong = urlOf(op, () => 'x'.repeat(300))
      expect(outcome(await call(op.method, overlong, { key: credential })), where).toBe(
        '414 URI_TOO_LONG',
      )
    }
    if (op.doc.requestBody !== undefined) {
      const raw = (text: string, type: string) => send({ key: credential, raw: { text, type } })
      expect(outcome(await raw('{}', 'text/plain')), where).toBe('415 UNSUPPORTED_MEDIA_TYPE')
      expect(outcome(await raw(`"${'x'.repeat(70_000)}"`, 'application/json')), where).toBe(
        '413 PAYLOAD_TOO_LARGE',
      )
      expect(outcome(await raw('{"name":', 'application/json')), where).toBe(
        '400 VALIDATION_FAILED',
      )
    }
  }
}

/** With a limit of one request per window, a key's second call to any tenant route is a 429. */
async function rateLimits(checker: ContractChecker, call: Call, key: string): Promise<void> {
  expect((await call('GET', `/v1/attempts/${NO_SUCH_ID}`, { key })).status).toBe(404)
  for (const op of checker.operations.filter(isTenant)) {
    const url = urlOf(op, (name) => VALID_PARAM[name] ?? NO_SUCH_ID)
    const answer = await call(op.method, url, {
      key,
      ...(op.doc.requestBody === undefined ? {} : { body: {} }),
    })
    expect(outcome(answer), `${op.method} ${op.path}`).toBe('429 RATE_LIMITED')
    expect(Number(answer.headers.get('retry-after'))).toBeGreaterThan(0)
  }
}

async function delegationsAndAttempts(call: Call, key: string): Promise<void> {
  const session = 'contract'
  const delegate = (body: object, headers: Record<string, string> = {}) =>
    call('POST', `/v1/sessions/${session}/delegations`, { key, body, headers })

  // 202 accepted; 200 terminal within the bound; 202 snapshot when the bound expires.
  const accepted = await delegate({ name: 'scripted', prompt: '{"output":"plain"}' })
  expect(accepted.status).toBe(202)
  expect(accepted.body).toEqual({
    agentId: expect.any(String),
    attemptId: expect.any(String),
    status: 'accepted',
  })
  const done = await delegate({
    name: 'scripted',
    prompt: '{"output":"done"}',
    wait: { timeoutMs: 20_000 },
  })
  expect(done.status).toBe(200)
  expect(done.body).toMatchObject({ status: 'terminal', stopReason: 'completed', output: 'done' })
  const hanging = await delegate({
    name: 'scripted',
    prompt: '{"awaitSteering":1}',
    wait: { timeoutMs: 50 },
  })
  expect(hanging.status).toBe(202)
  expect(['accepted', 'running']).toContain(hanging.body.status)
  const { attemptId, agentId } = hanging.body as { attemptId: string; agentId: string }

  // Refusals of a delegation.
  expect(outcome(await delegate({ name: 'nobody', prompt: 'x' }))).toBe('400 UNKNOWN_SUBAGENT')
  expect(outcome(await delegate({ name: 'scripted', prompt: '{"fail":true}' }))).toBe(
    '400 VALIDATION_FAILED',
  )
  expect(outcome(await delegate({ name: 'scripted', prompt: 'x', agentId: NO_SUCH_ID }))).toBe(
    '404 AGENT_NOT_FOUND',
  )
  expect(outcome(await delegate({ name: 'scripted', prompt: 'x', parentRunId: NO_SUCH_ID }))).toBe(
    '404 RUN_NOT_FOUND',
  )
  expect(outcome(await delegate({ name: 'scripted', prompt: 'x', agentId }))).toBe('409 AGENT_BUSY')
  const keyed = { 'idempotency-key': 'contract-key' }
  expect((await delegate({ name: 'scripted', prompt: 'once' }, keyed)).status).toBe(202)
  expect(outcome(await delegate({ name: 'scripted', prompt: 'other' }, keyed))).toBe(
    '409 IDEMPOTENCY_KEY_REUSED',
  )

  // A batch: one accepted item, one invalid, one unknown subagent.
  const batch = await call('POST', `/v1/sessions/${session}/delegations/batch`, {
    key,
    body: {
      items: [
        { name: 'scripted', prompt: 'x' },
        { name: 'scripted' },
        { name: 'nobody', prompt: 'x' },
      ],
    },
  })
  expect(batch.status).toBe(200)
  const results = (batch.body as { results: { status: number }[] }).results
  expect(results.map((r) => r.status)).toEqual([202, 400, 400])

  // Reads and waits: the snapshot, then the terminal view; unknown ids.
  const read = await call('GET', `/v1/attempts/${attemptId}`, { key })
  expect(read.status).toBe(200)
  const snapshot = await call('GET', `/v1/attempts/${attemptId}/wait?timeoutMs=0`, { key })
  expect(['accepted', 'running']).toContain(snapshot.body.status)
  expect(outcome(await call('GET', `/v1/attempts/${attemptId}/wait?timeoutMs=x`, { key }))).toBe(
    '400 VALIDATION_FAILED',
  )
  expect(outcome(await call('GET', `/v1/attempts/${NO_SUCH_ID}`, { key }))).toBe(
    '404 ATTEMPT_NOT_FOUND',
  )
  expect(outcome(await call('GET', `/v1/attempts/${NO_SUCH_ID}/wait`, { key }))).toBe(
    '404 ATTEMPT_NOT_FOUND',
  )

  // Steering ends the awaiting child; then steering and cancelling it are refused.
  const steer = (id: string) =>
    call('POST', `/v1/attempts/${id}/steer`, { key, body: { content: 'go on' } })
  expect((await steer(attemptId)).status).toBe(202)
  const ended = await call('GET', `/v1/attempts/${attemptId}/wait?timeoutMs=20000`, { key })
  expect(ended.body).toMatchObject({ status: 'terminal', output: 'go on' })
  expect(outcome(await steer(attemptId))).toBe('409 ATTEMPT_TERMINAL')
  expect(outcome(await steer(NO_SUCH_ID))).toBe('404 ATTEMPT_NOT_FOUND')
  const cancel = (id: string) => call('POST', `/v1/attempts/${id}/cancel`, { key, body: {} })
  expect(outcome(await cancel(attemptId))).toBe('409 ATTEMPT_TERMINAL')
  expect(outcome(await cancel(NO_SUCH_ID))).toBe('404 ATTEMPT_NOT_FOUND')
  const hang = await delegate({ name: 'scripted', prompt: '{"hang":true}' })
  const cancelled = await cancel(hang.body.attemptId)
  expect(cancelled.status).toBe(202)
  expect(['cancel_requested', 'cancelled_queued']).toContain(cancelled.body.outcome)
  // A cancel without a body (it is optional).
  const hang2 = await delegate({ name: 'scripted', prompt: '{"hang":true}' })
  expect((await call('POST', `/v1/attempts/${hang2.body.attemptId}/cancel`, { key })).status).toBe(
    202,
  )

  // An agent's history (the scripted child keeps none) and an unknown agent.
  const history = await call('GET', `/v1/agents/${agentId}/context`, { key })
  expect(history.body).toMatchObject({ agentId, events: [] })
  expect(outcome(await call('GET', `/v1/agents/${NO_SUCH_ID}/context`, { key }))).toBe(
    '404 AGENT_NOT_FOUND',
  )
}

async function hostedSessions(call: Call, key: string): Promise<void> {
  expect(outcome(await call('POST', '/v1/sessions', { key, body: { profile: 'nope' } }))).toBe(
    '400 UNKNOWN_PROFILE',
  )
  const created = await call('POST', '/v1/sessions', { key, body: { profile: 'recall' } })
  expect(created.status).toBe(201)
  const sessionId = created.body.sessionId as string
  expect((await call('GET', `/v1/sessions/${sessionId}`, { key })).status).toBe(200)
  expect(outcome(await call('GET', '/v1/sessions/no-such-session', { key }))).toBe(
    '404 SESSION_NOT_FOUND',
  )
  const run = await call('POST', `/v1/sessions/${sessionId}/runs`, {
    key,
    body: { input: 'hello', wait: 20_000 },
  })
  expect(run.status).toBe(201)
  const runId = run.body.runId as string
  expect((await call('GET', `/v1/runs/${runId}/wait?timeoutMs=10`, { key })).status).toBe(200)
  expect(outcome(await call('GET', `/v1/runs/${NO_SUCH_ID}/wait?timeoutMs=10`, { key }))).toBe(
    '404 RUN_NOT_FOUND',
  )
  expect(
    outcome(await call('POST', '/v1/sessions/no-such-session/runs', { key, body: { input: 'x' } })),
  ).toBe('404 SESSION_NOT_FOUND')
  expect(outcome(await call('POST', `/v1/sessions/${sessionId}/runs`, { key, body: {} }))).toBe(
    '409 SESSION_NOT_HOSTED',
  )
  // A keyed run: its retry answers the same run; the key with another input is refused.
  const keyed = { 'idempotency-key': 'contract-run-key' }
  const first = await call('POST', `/v1/sessions/${sessionId}/runs`, {
    key,
    body: { input: 'keyed' },
    headers: keyed,
  })
  const retried = await call('POST', `/v1/sessions/${sessionId}/runs`, {
    key,
    body: { input: 'keyed' },
    headers: keyed,
  })
  expect([first.status, retried.status, retried.body.runId]).toEqual([201, 201, first.body.runId])
  expect(
    outcome(
      await call('POST', `/v1/sessions/${sessionId}/runs`, {
        key,
        body: { input: 'other' },
        headers: keyed,
      }),
    ),
  ).toBe('409 IDEMPOTENCY_KEY_REUSED')
  for (const path of [`/v1/sessions/${sessionId}/events`, `/v1/runs/${runId}/events`])
    expect((await call('GET', `${path}?follow=false`, { key })).status).toBe(200)
  expect(outcome(await call('GET', '/v1/sessions/no-such-session/events', { key }))).toBe(
    '404 SESSION_NOT_FOUND',
  )
  expect(outcome(await call('GET', `/v1/runs/${NO_SUCH_ID}/events`, { key }))).toBe(
    '404 RUN_NOT_FOUND',
  )
}

async function runsAndContinuations(call: Call, key: string): Promise<void> {
  const session = 'contract-runs'
  const createRun = (sessionId: string, body?: object) =>
    call('POST', `/v1/sessions/${sessionId}/runs`, { key, ...(body ? { body } : {}) })
  const settle = (runId: string, verb: string) =>
    call('POST', `/v1/runs/${runId}/${verb}`, { key, body: {} })

  const run = await createRun(session, {})
  expect(run.status).toBe(201)
  const runId = run.body.runId as string
  expect((await call('GET', `/v1/runs/${runId}`, { key })).status).toBe(200)
  const heartbeat = (id: string) =>
    call('POST', `/v1/runs/${id}/heartbeat`, { key, body: { leaseMs: 30_000 } })
  expect((await heartbeat(runId)).status).toBe(200)
  expect(outcome(await heartbeat(NO_SUCH_ID))).toBe('404 RUN_NOT_FOUND')
  expect(outcome(await call('GET', `/v1/runs/${NO_SUCH_ID}`, { key }))).toBe('404 RUN_NOT_FOUND')
  expect(outcome(await createRun(session, { consume: [NO_SUCH_ID] }))).toBe(
    '409 RESULT_NOT_CONSUMABLE',
  )
  expect((await settle(runId, 'complete')).status).toBe(200)
  for (const verb of ['complete', 'fail', 'cancel']) {
    expect(outcome(await settle(NO_SUCH_ID, verb)), verb).toBe('404 RUN_NOT_FOUND')
  }
  expect(outcome(await settle(runId, 'fail'))).toBe('409 RUN_NOT_ACTIVE')
  expect(outcome(await heartbeat(runId))).toBe('409 RUN_NOT_ACTIVE')
  expect(outcome(await settle(runId, 'cancel'))).toBe('409 RUN_NOT_ACTIVE')
  expect((await settle((await createRun(session)).body.runId, 'fail')).status).toBe(200)
  expect((await settle((await createRun(session)).body.runId, 'cancel')).status).toBe(200)

  // Two results that land after their parent run completed: two continuations to claim.
  const claim = (timeoutMs: number) =>
    call('POST', `/v1/sessions/${session}/continuations/claim`, {
      key,
      body: { timeoutMs, leaseMs: 30_000 },
    })
  expect((await claim(0)).status).toBe(204)
  for (const output of ['first', 'second']) {
    const parent = (await createRun(session, {})).body.runId as string
    const child = await call('POST', `/v1/sessions/${session}/delegations`, {
      key,
      body: { name: 'scripted', prompt: JSON.stringify({ output }), parentRunId: parent },
    })
    expect(child.status).toBe(202)
    expect((await settle(parent, 'complete')).status).toBe(200)
    const view = await call('GET', `/v1/attempts/${child.body.attemptId}/wait?timeoutMs=20000`, {
      key,
    })
    expect(view.body).toMatchObject({ status: 'terminal', delivery: expect.any(Object) })
  }
  const claimed = await eventually(
    async () => {
      const answer = await claim(5000)
      return answer.status === 200 ? answer.body : undefined
    },
    { timeoutMs: 20_000, what: 'a continuation to claim' },
  )
  const fence = { claimToken: claimed.claim.claimToken, generation: claimed.claim.generation }
  const continuation = (runId: string, verb: string, body: object) =>
    call('POST', `/v1/continuations/${runId}/${verb}`, { key, body })
  expect(
    (await continuation(claimed.runId, 'heartbeat', { ...fence, leaseMs: 30_000 })).status,
  ).toBe(200)
  const stale = { ...fence, generation: fence.generation + 1 }
  expect(outcome(await continuation(claimed.runId, 'heartbeat', { ...stale, leaseMs: 1000 }))).toBe(
    '409 STALE_CLAIM',
  )
  expect(outcome(await continuation(NO_SUCH_ID, 'heartbeat', { ...fence, leaseMs: 1000 }))).toBe(
    '404 RUN_NOT_FOUND',
  )
  // A claimed continuation run is ended and kept by its claim, not by the run routes.
  expect(outcome(await settle(claimed.runId, 'complete'))).toBe('409 STALE_CLAIM')
  expect(outcome(await heartbeat(claimed.runId))).toBe('409 STALE_CLAIM')
  expect(outcome(await continuation(claimed.runId, 'complete', stale))).toBe('409 STALE_CLAIM')
  expect((await continuation(claimed.runId, 'complete', fence)).status).toBe(200)
  expect(outcome(await continuation(claimed.runId, 'fail', fence))).toBe('409 RUN_NOT_ACTIVE')
  for (const verb of ['complete', 'fail']) {
    expect(outcome(await continuation(NO_SUCH_ID, verb, fence)), verb).toBe('404 RUN_NOT_FOUND')
  }
  const second = (await claim(5000)).body
  const secondFence = { claimToken: second.claim.claimToken, generation: second.claim.generation }
  expect(outcome(await continuation(second.runId, 'fail', stale))).toBe('409 STALE_CLAIM')
  expect((await continuation(second.runId, 'fail', secondFence)).status).toBe(200)
  expect(outcome(await continuation(second.runId, 'complete', secondFence))).toBe(
    '409 RUN_NOT_ACTIVE',
  )

  // The deletion fence: 204, then nothing new is admitted; an unknown session is a 404.
  expect((await call('DELETE', `/v1/sessions/${session}`, { key })).status).toBe(204)
  expect(outcome(await call('DELETE', '/v1/sessions/never-used', { key }))).toBe(
    '404 SESSION_NOT_FOUND',
  )
  expect(outcome(await createRun(session, {}))).toBe('409 SESSION_DELETED')
  expect(
    outcome(
      await call('POST', `/v1/sessions/${session}/delegations`, {
        key,
        body: { name: 'scripted', prompt: 'x' },
      }),
    ),
  ).toBe('409 SESSION_DELETED')
}

async function artifacts(call: Call, key: string, db: Db): Promise<void> {
  const view = await call('POST', '/v1/sessions/contract-artifacts/delegations', {
    key,
    body: {
      name: 'scripted',
      prompt: JSON.stringify({ output: 'abc', outputBytes: 5000 }),
      wait: { timeoutMs: 20_000 },
    },
  })
  expect(view.status).toBe(200)
  const artifactId = view.body.artifact.artifactId as string
  const path = `/v1/artifacts/${artifactId}`
  const whole = await call('GET', path, { key })
  expect(whole.status).toBe(200)
  expect(whole.body).toHaveLength(5000)
  const range = await call('GET', path, { key, headers: { range: 'bytes=0-9' } })
  expect(range.status).toBe(206)
  expect(range.body).toBe('abcabcabca')
  expect(outcome(await call('GET', path, { key, headers: { range: 'bytes=5000-' } }))).toBe(
    '416 RANGE_NOT_SATISFIABLE',
  )
  expect(outcome(await call('GET', `/v1/artifacts/${NO_SUCH_ID}`, { key }))).toBe(
    '404 ARTIFACT_NOT_FOUND',
  )
  await sql`
    update artifact_chunks set content = ${Buffer.from('tampered')}
    where upload_id = (select upload_id from artifacts where id = ${artifactId})
  `.execute(db)
  expect(outcome(await call('GET', path, { key }))).toBe('500 ARTIFACT_INTEGRITY')
  await sql`update artifacts set expires_at = now() - interval '1 second' where id = ${artifactId}`.execute(
    db,
  )
  expect(outcome(await call('GET', path, { key }))).toBe('410 ARTIFACT_EXPIRED')
}

async function administration(call: Call): Promise<void> {
  const key = ADMIN_KEY
  const namespaceId = `contract-${randomUUID().slice(0, 8)}`
  expect((await call('POST', '/v1/admin/namespaces', { key, body: { namespaceId } })).status).toBe(
    201,
  )
  expect(outcome(await call('POST', '/v1/admin/namespaces', { key, body: { namespaceId } }))).toBe(
    '409 NAMESPACE_EXISTS',
  )
  expect((await call('GET', '/v1/admin/namespaces', { key })).status).toBe(200)
  const issued = await call('POST', `/v1/admin/namespaces/${namespaceId}/keys`, {
    key,
    body: { name: 'contract' },
  })
  expect(issued.status).toBe(201)
  expect(
    outcome(
      await call('POST', '/v1/admin/namespaces/no-such-namespace/keys', {
        key,
        body: { name: 'x' },
      }),
    ),
  ).toBe('404 NAMESPACE_NOT_FOUND')
  expect((await call('GET', `/v1/admin/namespaces/${namespaceId}/keys`, { key })).status).toBe(200)
  expect(outcome(await call('GET', '/v1/admin/namespaces/no-such-namespace/keys', { key }))).toBe(
    '404 NAMESPACE_NOT_FOUND',
  )
  const revoke = (keyId: string) => call('POST', `/v1/admin/keys/${keyId}/revoke`, { key })
  expect((await revoke(issued.body.keyId)).status).toBe(200)
  expect(outcome(await revoke(NO_SUCH_ID))).toBe('404 API_KEY_NOT_FOUND')
  const limits = `/v1/admin/namespaces/${namespaceId}/limits`
  const body = { artifactMaxBytes: 1000 }
  expect((await call('PUT', limits, { key, body })).status).toBe(200)
  expect((await call('GET', limits, { key })).body).toMatchObject({ limits: body })
  const nobody = '/v1/admin/namespaces/no-such-namespace/limits'
  expect(outcome(await call('PUT', nobody, { key, body }))).toBe('404 NAMESPACE_NOT_FOUND')
  expect(outcome(await call('GET', nobody, { key }))).toBe('404 NAMESPACE_NOT_FOUND')
}

/** Webhook registration (a session's, a namespace's) and the deliveries' listing. */
async function webhooks(call: Call, key: string): Promise<void> {
  // A reserved name that resolves nowhere: nothing is ever sent to it.
  const body = { url: 'https://hooks.invalid/baton' }
  const session = `/v1/sessions/contract-webhook/webhook`
  const registered = await call('PUT', session, { key, body })
  expect(registered.status).toBe(200)
  expect(registered.body.secret).toMatch(/^whsec_/)
  expect(
    outcome(await call('PUT', session, { key, body: { url: 'http://127.0.0.1:9/hook' } })),
  ).toBe('400 WEBHOOK_URL_REFUSED')
  expect((await call('GET', session, { key })).body).toMatchObject({ url: body.url })
  expect((await call('DELETE', session, { key })).status).toBe(204)
  expect(outcome(await call('GET', session, { key }))).toBe('404 WEBHOOK_NOT_FOUND')
  expect(outcome(await call('DELETE', session, { key }))).toBe('404 WEBHOOK_NOT_FOUND')
  expect((await call('GET', '/v1/webhook-deliveries?limit=5', { key })).status).toBe(200)
  expect(outcome(await call('GET', '/v1/webhook-deliveries?state=lost', { key }))).toBe(
    '400 VALIDATION_FAILED',
  )

  const admin = { key: ADMIN_KEY }
  const namespaceId = `contract-hooks-${randomUUID().slice(0, 8)}`
  expect(
    (await call('POST', '/v1/admin/namespaces', { ...admin, body: { namespaceId } })).status,
  ).toBe(201)
  const namespace = `/v1/admin/namespaces/${namespaceId}/webhook`
  expect((await call('PUT', namespace, { ...admin, body })).status).toBe(200)
  expect(
    outcome(
      await call('PUT', '/v1/admin/namespaces/no-such-namespace/webhook', { ...admin, body }),
    ),
  ).toBe('404 NAMESPACE_NOT_FOUND')
  expect(
    outcome(await call('PUT', namespace, { ...admin, body: { url: 'http://[::1]:9/hook' } })),
  ).toBe('400 WEBHOOK_URL_REFUSED')
  expect((await call('GET', namespace, admin)).body).toMatchObject({ sessionId: null })
  expect((await call('DELETE', namespace, admin)).status).toBe(204)
  expect(outcome(await call('GET', namespace, admin))).toBe('404 WEBHOOK_NOT_FOUND')
  expect(outcome(await call('DELETE', namespace, admin))).toBe('404 WEBHOOK_NOT_FOUND')
}

async function dashboard(call: Call, db: Db): Promise<void> {
  const key = ADMIN_KEY
  expect((await call('GET', '/admin/api/overview', { key })).status).toBe(200)
  const timeline = (id: string) => call('GET', `/admin/api/attempts/${id}/timeline`, { key })
  const attempt = await db.selectFrom('attempts').select('id').limit(1).executeTakeFirstOrThrow()
  expect((await timeline(attempt.id)).status).toBe(200)
  expect(outcome(await timeline(NO_SUCH_ID))).toBe('404 ATTEMPT_NOT_FOUND')
  expect((await call('GET', '/admin/api/sessions', { key })).status).toBe(200)
  const session = await db
    .selectFrom('sessions')
    .select(['namespace_id', 'id'])
    .limit(1)
    .executeTakeFirstOrThrow()
  const sessionView = (namespaceId: string, sessionId: string) =>
    call('GET', `/admin/api/sessions/${namespaceId}/${encodeURIComponent(sessionId)}`, { key })
  expect((await sessionView(session.namespace_id, session.id)).status).toBe(200)
  expect(outcome(await sessionView(session.namespace_id, 'no-such-session'))).toBe(
    '404 SESSION_NOT_FOUND',
  )
}

async function health(call: Call): Promise<void> {
  expect((await call('GET', '/healthz')).body).toEqual({ status: 'ok' })
  expect((await call('GET', '/readyz')).body).toMatchObject({ status: 'ready' })
}

/** `/readyz` on a database without migrations: 503 with the failing check. */
async function readinessOfAnUnmigratedDatabase(
  checker: ContractChecker,
  ctx: {
    readonly databaseUrl: string
    readonly redisUrl: string
    readonly queuePrefix: string
    readonly db: Db
  },
): Promise<void> {
  const name = `baton_t_bare_${randomUUID().replaceAll('-', '').slice(0, 12)}`
  const url = new URL(ctx.databaseUrl)
  url.pathname = `/${name}`
  await sql.raw(`create database ${name}`).execute(ctx.db)
  try {
    const config = loadConfig({
      DATABASE_URL: url.toString(),
      REDIS_URL: ctx.redisUrl,
      QUEUE_PREFIX: ctx.queuePrefix,
      LOG_LEVEL: 'silent',
    })
    const api = await composeApi(config, createLogger({ service: 'test', level: 'silent' }))
    try {
      const base = await api.app.listen({ host: '127.0.0.1', port: 0 })
      const answer = await caller(checker, base)('GET', '/readyz')
      expect(answer.status).toBe(503)
      expect(answer.body).toMatchObject({ status: 'not_ready', checks: { postgres: 'ok' } })
    } finally {
      await api.close()
    }
  } finally {
    await sql.raw(`drop database if exists ${name} with (force)`).execute(ctx.db)
  }
}
