import { sql } from 'kysely'
import type { Db } from '../db.ts'
import type { WebhookRow } from '../schema.ts'

/** A registered webhook: its scope (a session, or the whole namespace when null) and endpoint. */
export interface WebhookRecord {
  readonly id: string
  readonly namespaceId: string
  readonly sessionId: string | null
  readonly url: string
  readonly secret: string
  readonly createdAt: Date
  readonly updatedAt: Date
}

/** A webhook's scope: a namespace's (`sessionId` null) or one session's. */
export interface WebhookScope {
  readonly namespaceId: string
  readonly sessionId: string | null
}

/**
 * Register the scope's webhook, or replace its URL and secret (one per scope: the row, and the
 * deliveries still due to it, keep their id). Outcome: the webhook, or `namespace_missing`.
 * Retry safety: the same registration again answers the same webhook.
 */
export async function registerWebhook(
  db: Db,
  input: WebhookScope & { readonly id: string; readonly url: string; readonly secret: string },
): Promise<{ kind: 'registered'; webhook: WebhookRecord } | { kind: 'namespace_missing' }> {
  const result = await sql<WebhookRow>`
    insert into webhooks (id, namespace_id, session_id, url, secret)
    select ${input.id}::uuid, n.id, ${input.sessionId}, ${input.url}, ${input.secret}
    from namespaces n where n.id = ${input.namespaceId}
    on conflict (namespace_id, (coalesce(session_id, '')))
    do update set url = excluded.url, secret = excluded.secret, updated_at = now()
    returning *
  `.execute(db)
  const row = result.rows[0]
  return row === undefined
    ? { kind: 'namespace_missing' }
    : { kind: 'registered', webhook: toWebhookRecord(row) }
}

/** The scope's webhook, or `undefined`. */
export async function getWebhook(db: Db, scope: WebhookScope): Promise<WebhookRecord | undefined> {
  const row = await db
    .selectFrom('webhooks')
    .selectAll()
    .where('namespace_id', '=', scope.namespaceId)
    .where(sql<string>`coalesce(session_id, '')`, '=', scope.sessionId ?? '')
    .executeTakeFirst()
  return row === undefined ? undefined : toWebhookRecord(row)
}

/**
 * Remove the scope's webhook: deliveries still due to it fail (`unregistered`) at their next try,
 * and a continuation one of them carried stays for a claim. Outcome: whether one was removed.
 */
export async function removeWebhook(db: Db, scope: WebhookScope): Promise<boolean> {
  const result = await db
    .deleteFrom('webhooks')
    .where('namespace_id', '=', scope.namespaceId)
    .where(sql<string>`coalesce(session_id, '')`, '=', scope.sessionId ?? '')
    .executeTakeFirst()
  return result.numDeletedRows > 0n
}

function toWebhookRecord(row: WebhookRow): WebhookRecord {
  return {
    id: row.id,
    namespaceId: row.namespace_id,
    sessionId: row.session_id,
    url: row.url,
    secret: row.secret,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  }
}
