import { sql } from 'kysely'
import type { WebhookDeliveryState, WebhookDeliveryView, WebhookEventType } from '@baton/contracts'
import type { Db } from '../db.ts'
import type { WebhookDeliveryRow } from '../schema.ts'

/** A delivery a worker now holds: what to send, where, and the fence of its lease. */
export interface TakenWebhookDelivery {
  /** The stable `webhook-id`. */
  readonly id: string
  readonly namespaceId: string
  readonly sessionId: string
  readonly eventType: WebhookEventType
  readonly attemptId: string
  /** The endpoint, or null when its webhook was removed since the event. */
  readonly endpoint: { readonly url: string; readonly secret: string } | null
  /** Tries started, this one included. */
  readonly tries: number
  /** Older than the take's `maxAgeMs` (on the database clock): to be failed, not tried. */
  readonly expired: boolean
  /** The event's time, the same on every try. */
  readonly createdAt: Date
  readonly fence: WebhookDeliveryFence
}

export interface WebhookDeliveryFence {
  readonly ownerId: string
  readonly generation: number
}

/**
 * Take up to `limit` due deliveries, oldest due first, from `webhook_deliveries_due_idx`: pending
 * ones whose next try is due, and sending ones whose holder's lease ended (a worker that died
 * mid-try). Each becomes `sending` under (`ownerId`, generation + 1) with a lease of `leaseMs` on
 * the database clock, and counts one more try. Rows another taker holds are skipped.
 * Outcome: the taken deliveries. Retry safety: a retried take takes other rows, or the same once
 * their lease ended; a try a crash cut short is counted, and its row is taken again.
 */
export async function takeWebhookDeliveries(
  db: Db,
  input: {
    readonly ownerId: string
    readonly leaseMs: number
    readonly limit: number
    readonly maxAgeMs: number
  },
): Promise<TakenWebhookDelivery[]> {
  const result = await sql<
    WebhookDeliveryRow & { url: string | null; secret: string | null; expired: boolean }
  >`
    with due as (
      select id from webhook_deliveries
      where state in ('pending', 'sending') and next_try_at <= now()
      order by next_try_at
      limit ${input.limit}
      for update skip locked
    )
    update webhook_deliveries d
    set state = 'sending', owner_id = ${input.ownerId}, owner_generation = d.owner_generation + 1,
        tries = d.tries + 1, next_try_at = now() + ${input.leaseMs} * interval '1 millisecond'
    from due
    where d.id = due.id
    returning d.*,
              (select w.url from webhooks w where w.id = d.webhook_id) as url,
              (select w.secret from webhooks w where w.id = d.webhook_id) as secret,
              d.created_at <= now() - ${input.maxAgeMs}::float8 * interval '1 millisecond'
                as expired
  `.execute(db)
  return result.rows.map((row) => ({
    id: row.id,
    namespaceId: row.namespace_id,
    sessionId: row.session_id,
    eventType: row.event_type,
    attemptId: row.attempt_id,
    endpoint: row.url === null || row.secret === null ? null : { url: row.url, secret: row.secret },
    tries: row.tries,
    expired: row.expired,
    createdAt: row.created_at,
    fence: { ownerId: input.ownerId, generation: row.owner_generation },
  }))
}

/** How a try ended. */
export type WebhookTryEnd =
  | { readonly kind: 'delivered'; readonly status: number }
  /** Not acknowledged: tried again after `retryInMs`. */
  | {
      readonly kind: 'retry'
      readonly retryInMs: number
      readonly status: number | null
      readonly error: string
    }
  /** Not to be tried again: refused destination, redirect, out of tries or age, unregistered. */
  | { readonly kind: 'failed'; readonly status: number | null; readonly error: string }
  /** The continuation was consumed or suppressed by other means. */
  | { readonly kind: 'superseded'; readonly error: string }

/**
 * Record how a try ended, fenced by the taker's (owner, generation) while the row is `sending`.
 * Outcome: `settled`, or `stale` when another taker holds the row now (this worker's lease ended
 * and the row was taken again: that taker decides). Retry safety: a repeat after `settled` is
 * `stale` and writes nothing.
 */
export async function settleWebhookDelivery(
  db: Db,
  id: string,
  fence: WebhookDeliveryFence,
  end: WebhookTryEnd,
): Promise<'settled' | 'stale'> {
  const state: WebhookDeliveryState = end.kind === 'retry' ? 'pending' : end.kind
  const retryInMs = end.kind === 'retry' ? end.retryInMs : null
  const status = end.kind === 'superseded' ? null : end.status
  const error = end.kind === 'delivered' ? null : end.error
  const result = await sql`
    update webhook_deliveries
    set state = ${state}, owner_id = null,
        next_try_at = case when ${retryInMs}::float8 is null then null
                           else now() + ${retryInMs}::float8 * interval '1 millisecond' end,
        delivered_at = case when ${state} = 'delivered' then now() else delivered_at end,
        last_status = ${status}::int, last_error = ${error}
    where id = ${id} and state = 'sending' and owner_id = ${fence.ownerId}
      and owner_generation = ${fence.generation}
  `.execute(db)
  return (result.numAffectedRows ?? 0n) > 0n ? 'settled' : 'stale'
}

/** A namespace's deliveries, newest first: a session's, or the whole namespace's. */
export async function listWebhookDeliveries(
  db: Db,
  input: {
    readonly namespaceId: string
    readonly sessionId?: string | undefined
    readonly state?: WebhookDeliveryState | undefined
    readonly limit: number
  },
): Promise<WebhookDeliveryView[]> {
  let query = db
    .selectFrom('webhook_deliveries')
    .selectAll()
    .where('namespace_id', '=', input.namespaceId)
  if (input.sessionId !== undefined) query = query.where('session_id', '=', input.sessionId)
  if (input.state !== undefined) query = query.where('state', '=', input.state)
  const rows = await query.orderBy('created_at', 'desc').orderBy('id').limit(input.limit).execute()
  return rows.map(toWebhookDeliveryView)
}

export function toWebhookDeliveryView(row: WebhookDeliveryRow): WebhookDeliveryView {
  const open = row.state === 'pending' || row.state === 'sending'
  return {
    webhookId: row.id,
    type: row.event_type,
    sessionId: row.session_id,
    attemptId: row.attempt_id,
    state: row.state,
    tries: row.tries,
    nextTryAt: open ? (row.next_try_at?.toISOString() ?? null) : null,
    createdAt: row.created_at.toISOString(),
    deliveredAt: row.delivered_at?.toISOString() ?? null,
    lastStatus: row.last_status,
    lastError: row.last_error,
  }
}
