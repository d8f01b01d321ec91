// Push delivery end to end: the API and workers as processes, a real receiving HTTP server that
// verifies every request's Standard Webhooks signature and deduplicates on `webhook-id`.
import { randomBytes } from 'node:crypto'
import { sql } from 'kysely'
import { verifyDelivery } from '@baton/client'
import type { WebhookDeliveryView } from '@baton/contracts'
import type { Db } from '@baton/store'
import {
  auditContinuations,
  describe,
  eventually,
  expect,
  startWebhookReceiver,
  test,
  type BatonStack,
  type WebhookAnswer,
} from '@baton/testing'

/** Quick retries, a short bound per POST, loopback allowed (the receiver is on 127.0.0.1). */
const QUICK = {
  WEBHOOK_ALLOW_PRIVATE: 'true',
  WEBHOOK_TIMEOUT_MS: '1500',
  WEBHOOK_RETRY_BASE_MS: '200',
  WEBHOOK_RETRY_MAX_MS: '1000',
  WEBHOOK_POLL_INTERVAL_MS: '200',
}

const newSecret = (): string => `whsec_${randomBytes(32).toString('base64')}`
const compact = (attemptId: string): string => attemptId.replaceAll('-', '')
const continuationId = (attemptId: string): string => `msg_continuation_${compact(attemptId)}`
const terminalId = (attemptId: string): string => `msg_attempt_terminal_${compact(attemptId)}`

async function call(
  stack: BatonStack,
  method: 'PUT' | 'DELETE' | 'GET',
  path: string,
  body?: unknown,
): Promise<{ status: number; body: unknown }> {
  const r = await fetch(`${stack.base}${path}`, {
    method,
    headers: {
      ...stack.auth,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  })
  const text = await r.text()
  return { status: r.status, body: text === '' ? undefined : JSON.parse(text) }
}

/** A run delegates one scripted child per output, then ends: each result comes back later. */
async function lateResults(stack: BatonStack, sessionId: string, outputs: readonly string[]) {
  const run = await stack.client.createRun(sessionId)
  const attemptIds: string[] = []
  for (const output of outputs) {
    const accepted = await stack.client.delegate({
      sessionId,
      name: 'scripted',
      prompt: JSON.stringify({ output }),
      parentRunId: run.runId,
    })
    attemptIds.push(accepted.attemptId)
  }
  await stack.client.completeRun(run.runId)
  return attemptIds
}

async function deliveriesOf(stack: BatonStack, sessionId: string): Promise<WebhookDeliveryView[]> {
  const answer = await call(stack, 'GET', `/v1/webhook-deliveries?sessionId=${sessionId}`)
  expect(answer.status).toBe(200)
  return (answer.body as { deliveries: WebhookDeliveryView[] }).deliveries
}

/** The session's deliveries once `count` of them are in `state`. */
async function untilDeliveries(
  stack: BatonStack,
  sessionId: string,
  count: number,
  state: WebhookDeliveryView['state'],
): Promise<WebhookDeliveryView[]> {
  return eventually(
    async () => {
      const all = await deliveriesOf(stack, sessionId)
      return all.length === count && all.every((d) => d.state === state) ? all : undefined
    },
    { timeoutMs: 90_000, what: `${count} webhook deliveries of ${sessionId} ${state}` },
  )
}

/** Each attempt's continuation runs: how many, and their statuses. */
async function continuationRuns(db: Db, attemptId: string): Promise<string[]> {
  const rows = await sql<{ status: string }>`
    select status from runs where cause_attempt_id = ${attemptId}::uuid
  `.execute(db)
  return rows.rows.map((r) => r.status)
}

describe('webhooks', () => {
  test('a receiver that fails (500), times out and answers late gets each continuation and terminal attempt delivered with one stable id, verified by its signature: one logical delivery each', async ({
    baton,
    db,
  }) => {
    const stack = await baton({ env: QUICK })
    const secret = newSecret()
    // Each id: first a 500, then no answer (Baton's bound passes), then an answer after the bound,
    // then 200.
    const receiver = await startWebhookReceiver({
      secret,
      answer: (r): WebhookAnswer =>
        r.nth === 1
          ? { status: 500 }
          : r.nth === 2
            ? 'hold'
            : r.nth === 3
              ? { status: 200, delayMs: 4000 }
              : { status: 200 },
    })
    try {
      const session = 'push-retries'
      const registered = await call(stack, 'PUT', `/v1/sessions/${session}/webhook`, {
        url: receiver.url,
        secret,
      })
      expect(registered).toMatchObject({ status: 200, body: { url: receiver.url, secret } })
      const outputs = ['first result', 'second result', 'third result']
      const attemptIds = await lateResults(stack, session, outputs)
      const deliveries = await untilDeliveries(stack, session, 6, 'delivered')

      const expected = attemptIds.flatMap((a) => [continuationId(a), terminalId(a)]).sort()
      expect(deliveries.map((d) => d.webhookId).sort()).toEqual(expected)
      for (const d of deliveries) expect(d.tries).toBe(4)
      // Every request carried one of the expected ids and a valid signature; each id came four
      // times (500, no answer, late, 200) and the receiver processed it once.
      expect(receiver.requests.every((r) => r.verified)).toBe(true)
      expect([...new Set(receiver.requests.map((r) => r.id))].sort()).toEqual(expected)
      for (const id of expected)
        expect(receiver.requests.filter((r) => r.id === id).map((r) => r.nth)).toEqual([1, 2, 3, 4])
      expect([...receiver.processed.keys()].sort()).toEqual(expected)

      for (const [i, attemptId] of attemptIds.entries()) {
        const payload = receiver.processed.get(continuationId(attemptId)) as {
          type: string
          data: Parameters<typeof verifyDelivery>[0]
        }
        expect(payload.type).toBe('continuation.admitted')
        // The receipt binds the input, and the content is what the input names.
        expect(verifyDelivery(payload.data).text).toBe(outputs[i])
        const terminal = receiver.processed.get(terminalId(attemptId)) as {
          type: string
          data: { attemptId: string; status: string }
        }
        expect(terminal).toMatchObject({
          type: 'attempt.terminal',
          data: { attemptId, status: 'terminal' },
        })
        // Exactly one continuation run, completed by the endpoint's acknowledgement.
        expect(await continuationRuns(db, attemptId)).toEqual(['completed'])
        expect(await stack.client.getAttempt(attemptId)).toMatchObject({
          delivery: { state: 'delivered' },
        })
      }
      expect(await auditContinuations(db, [session])).toMatchObject({
        admitted: 3,
        delivered: 3,
        duplicate: 0,
        missing: 0,
        unreceipted: 0,
      })
    } finally {
      await receiver.close()
    }
  }, 180_000)

  test('a worker SIGKILLed mid-delivery: after a restart the receiver sees every id, none lost, each continuation delivered once', async ({
    baton,
    db,
  }) => {
    const stack = await baton({ env: { ...QUICK, WEBHOOK_TIMEOUT_MS: '5000' } })
    const secret = newSecret()
    let held: string | undefined
    const receiver = await startWebhookReceiver({
      secret,
      // The first continuation's first request is never answered: its worker dies holding it.
      answer: (r): WebhookAnswer => {
        if (held === undefined && r.id.startsWith('msg_continuation_')) {
          held = r.id
          return 'hold'
        }
        return { status: 200 }
      },
    })
    try {
      const session = 'push-kill'
      expect(
        (await call(stack, 'PUT', `/v1/sessions/${session}/webhook`, { url: receiver.url, secret }))
          .status,
      ).toBe(200)
      const attemptIds = await lateResults(stack, session, ['one', 'two', 'three'])
      const first = await receiver.untilRequest((r) => r.id.startsWith('msg_continuation_'))
      await stack.restartWorker()

      await untilDeliveries(stack, session, 6, 'delivered')
      const expected = attemptIds.flatMap((a) => [continuationId(a), terminalId(a)]).sort()
      expect([...receiver.processed.keys()].sort()).toEqual(expected)
      expect(receiver.requests.every((r) => r.verified)).toBe(true)
      // The held id came again (same id) from the worker that replaced the dead one.
      expect(receiver.requests.filter((r) => r.id === first.id).length).toBeGreaterThanOrEqual(2)
      for (const attemptId of attemptIds)
        expect(await continuationRuns(db, attemptId)).toEqual(['completed'])
      expect(await auditContinuations(db, [session])).toMatchObject({
        admitted: 3,
        delivered: 3,
        duplicate: 0,
        missing: 0,
      })
    } finally {
      await receiver.close()
    }
  }, 180_000)

  test('a refused destination is never contacted and is reported: a host outside the allowlist at registration, a name resolving to loopback at delivery, a redirect not followed', async ({
    baton,
    db,
  }) => {
    const stack = await baton({
      workers: 0,
      env: { ...QUICK, WEBHOOK_ALLOWED_HOSTS: 'localhost,127.0.0.1' },
    })
    const secret = newSecret()
    const target = await startWebhookReceiver({ secret })
    const redirecting = await startWebhookReceiver({
      secret,
      answer: () => ({ status: 302, location: target.url }),
    })
    try {
      // Outside the allowlist: refused at registration, nothing written.
      const outside = await call(stack, 'PUT', '/v1/sessions/refused/webhook', {
        url: 'http://example.com/hook',
      })
      expect(outside).toMatchObject({
        status: 400,
        body: { error: { code: 'WEBHOOK_URL_REFUSED' } },
      })
      expect((await call(stack, 'GET', '/v1/sessions/refused/webhook')).status).toBe(404)
      const rows = await sql<{ n: number }>`
        select count(*)::int as n from webhooks where session_id = 'refused'
      `.execute(db)
      expect(rows.rows[0]?.n).toBe(0)

      // A name whose addresses are loopback, to a worker that allows no private address: refused
      // when resolved, so nothing is sent; reported as failed, not retried.
      await stack.startWorker({ WEBHOOK_ALLOW_PRIVATE: 'false' })
      const byName = target.url.replace('127.0.0.1', 'localhost')
      expect(
        (await call(stack, 'PUT', '/v1/sessions/refused/webhook', { url: byName, secret })).status,
      ).toBe(200)
      const [refusedAttempt] = await lateResults(stack, 'refused', ['private'])
      const refused = await untilDeliveries(stack, 'refused', 2, 'failed')
      for (const d of refused) {
        expect(d.lastError).toMatch(/^destination refused: address .* is private/)
        expect(d.tries).toBe(1)
      }
      expect(target.requests).toEqual([])
      // The continuation the refused delivery claimed is released: a host may still claim it.
      expect(await stack.client.getAttempt(refusedAttempt ?? '')).toMatchObject({
        delivery: { state: 'pending' },
      })

      // A redirect is not followed: its target is never contacted; failed after one try.
      await stack.killWorker()
      await stack.startWorker({ WEBHOOK_ALLOW_PRIVATE: 'true' })
      expect(
        (
          await call(stack, 'PUT', '/v1/sessions/redirected/webhook', {
            url: redirecting.url,
            secret,
          })
        ).status,
      ).toBe(200)
      await lateResults(stack, 'redirected', ['redirect me'])
      const redirected = await untilDeliveries(stack, 'redirected', 2, 'failed')
      for (const d of redirected) {
        expect(d).toMatchObject({ lastStatus: 302, lastError: 'redirect (302) not followed' })
        expect(d.tries).toBe(1)
      }
      expect(redirecting.requests).toHaveLength(2)
      expect(redirecting.requests.every((r) => r.verified)).toBe(true)
      expect(target.requests).toEqual([])
    } finally {
      await target.close()
      await redirecting.close()
    }
  }, 180_000)
})
