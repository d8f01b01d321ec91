// The webhook outbox: which webhook an event goes to, one row per event whatever path repeats it,
// and the fenced take and settle of a delivery.
import { randomUUID } from 'node:crypto'
import { sql } from 'kysely'
import { describe, expect, test } from '@baton/testing'
import type { Db } from '../../src/db.ts'
import { requestCancel } from '../../src/attempts/request-cancel.ts'
import { registerWebhook, removeWebhook } from '../../src/webhooks/webhook-registry.ts'
import {
  settleWebhookDelivery,
  takeWebhookDeliveries,
} from '../../src/webhooks/webhook-deliveries.ts'
import { acceptScripted } from '../support/attempts.ts'

const NS = 'default'
const SECRET = `whsec_${'A'.repeat(32)}`

/** A queued attempt of `sessionId` cancelled: terminal, in the statement of the cancel. */
async function terminalIn(db: Db, sessionId: string): Promise<string> {
  const { attemptId } = await acceptScripted(db, sessionId)
  expect((await requestCancel(db, { attemptId, reason: null })).kind).toBe('cancelled_queued')
  return attemptId
}

const take = (db: Db, ownerId = 'w1') =>
  takeWebhookDeliveries(db, { ownerId, leaseMs: 60_000, limit: 100, maxAgeMs: 86_400_000 })

describe('the webhook outbox', () => {
  test("an event goes to its session's webhook, else to the namespace's, else nowhere; one row per event, its id stable", async ({
    db,
  }) => {
    const unregistered = await terminalIn(db, 'no-hook')
    const register = (sessionId: string | null, url: string) =>
      registerWebhook(db, { namespaceId: NS, sessionId, id: randomUUID(), url, secret: SECRET })
    expect((await register(null, 'https://ns.example/hook')).kind).toBe('registered')
    expect((await register('own', 'https://own.example/hook')).kind).toBe('registered')
    expect(
      (
        await registerWebhook(db, {
          namespaceId: 'no-such-namespace',
          sessionId: null,
          id: randomUUID(),
          url: 'https://x.example/',
          secret: SECRET,
        })
      ).kind,
    ).toBe('namespace_missing')

    const own = await terminalIn(db, 'own')
    const other = await terminalIn(db, 'other')
    // The same terminal transition cannot happen twice; a repeated cancel writes nothing more.
    await requestCancel(db, { attemptId: own, reason: null })
    const taken = await take(db)
    const urlOf = new Map(taken.map((t) => [t.attemptId, t.endpoint?.url]))
    expect(urlOf).toEqual(
      new Map([
        [own, 'https://own.example/hook'],
        [other, 'https://ns.example/hook'],
      ]),
    )
    expect(taken.find((t) => t.attemptId === unregistered)).toBeUndefined()
    const ownDelivery = taken.find((t) => t.attemptId === own)
    expect(ownDelivery).toMatchObject({
      id: `msg_attempt_terminal_${own.replaceAll('-', '')}`,
      eventType: 'attempt.terminal',
      tries: 1,
      expired: false,
      fence: { ownerId: 'w1', generation: 1 },
    })
    // Taken: not due again while its lease lasts.
    expect(await take(db, 'w2')).toEqual([])

    // Settling is fenced by the taker's generation.
    if (ownDelivery === undefined) throw new Error('no delivery')
    const end = { kind: 'retry', retryInMs: 0, status: 500, error: 'answered 500' } as const
    expect(
      await settleWebhookDelivery(db, ownDelivery.id, { ownerId: 'w1', generation: 0 }, end),
    ).toBe('stale')
    expect(await settleWebhookDelivery(db, ownDelivery.id, ownDelivery.fence, end)).toBe('settled')
    expect(await settleWebhookDelivery(db, ownDelivery.id, ownDelivery.fence, end)).toBe('stale')
    // Due again at once, with the same id, one more try.
    const again = await take(db, 'w2')
    expect(again.map((t) => [t.id, t.tries, t.fence.generation])).toEqual([[ownDelivery.id, 2, 2]])

    // A removed webhook leaves its deliveries without an endpoint.
    expect(await removeWebhook(db, { namespaceId: NS, sessionId: 'other' })).toBe(false)
    expect(await removeWebhook(db, { namespaceId: NS, sessionId: null })).toBe(true)
    await sql`update webhook_deliveries set next_try_at = now() where attempt_id = ${other}::uuid`.execute(
      db,
    )
    const orphaned = await take(db, 'w3')
    expect(orphaned.map((t) => [t.attemptId, t.endpoint])).toEqual([[other, null]])
  })
})
