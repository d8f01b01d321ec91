// The push-delivery phase of `npm run chaos`: one session in eight has a webhook to a receiver this
// script runs (@baton/testing's, which verifies each request's Standard Webhooks signature and
// deduplicates on `webhook-id`). It answers some first tries 500 and some only after Baton's bound,
// all under the run's faults (workers killed mid-delivery among them). Those sessions'
// continuations are left to the endpoint: the host's claim loop skips them. The audit compares the
// events the ledger says happened in those sessions (every terminal attempt, every admitted
// continuation) with what the receiver processed: `missing` must be 0, and so `bad_signature`.
import { randomBytes } from 'node:crypto'
import { sql } from 'kysely'
import { isTransientStoreError, type Db } from '@baton/store'
import { startWebhookReceiver, type WebhookReceiver } from '@baton/testing/webhook-receiver'
import { retryCall } from './retry.ts'
import { POST_TIMEOUT_MS, type ChaosRun } from './run.ts'

/** The settings the fleet runs with: quick retries, a short bound, the receiver on loopback. */
export const WEBHOOK_ENV = {
  WEBHOOK_ALLOW_PRIVATE: 'true',
  WEBHOOK_TIMEOUT_MS: '2000',
  WEBHOOK_RETRY_BASE_MS: '200',
  WEBHOOK_RETRY_MAX_MS: '2000',
  WEBHOOK_MAX_TRIES: '1000',
  WEBHOOK_POLL_INTERVAL_MS: '250',
}

/** How late a late answer is: past `WEBHOOK_TIMEOUT_MS`, so the try counts as unacknowledged. */
const LATE_MS = 3_000

export interface WebhookAudit {
  /** Events the ledger holds for the pushed sessions (terminal attempts, admitted continuations). */
  readonly ids: number
  /** Of those, how many the receiver processed (verified, answered 2xx, once per id). */
  readonly delivered: number
  readonly missing: number
  readonly bad_signature: number
  /** Requests the receiver saw (every try, duplicates included). */
  readonly requests: number
  /** Some missing ids (at most ten). */
  readonly samples: readonly string[]
}

export interface PushDelivery {
  /** Whether the session's continuations go to the endpoint (the host must not claim them). */
  isPushed(sessionId: string): boolean
  /** Waits until nothing is due in the pushed sessions' outbox, then audits. */
  audit(db: Db): Promise<WebhookAudit>
  close(): Promise<void>
}

/** Registers the pushed sessions' webhooks (before anything is delegated in them). */
export async function startPushDelivery(run: ChaosRun): Promise<PushDelivery> {
  const secret = `whsec_${randomBytes(32).toString('base64')}`
  const receiver: WebhookReceiver = await startWebhookReceiver({
    secret,
    answer: (r) => {
      if (r.nth > 1) return { status: 200 }
      const roll = Math.random()
      return roll < 0.15
        ? { status: 500 }
        : roll < 0.25
          ? { status: 200, delayMs: LATE_MS }
          : { status: 200 }
    },
  })
  const sessions = Array.from({ length: 97 }, (_, n) => n)
    .filter((n) => n % 8 === 0)
    .map((n) => `chaos-${n}`)
  const pushed = new Set(sessions)
  for (const sessionId of sessions) {
    await retryCall(
      () =>
        run.client.registerSessionWebhook(
          sessionId,
          { url: receiver.url, secret },
          { timeoutMs: POST_TIMEOUT_MS },
        ),
      { signal: AbortSignal.timeout(60_000), maxDelayMs: 250 },
    )
  }
  run.note(`webhooks registered for ${sessions.length} sessions; receiver ${receiver.url}`)

  const read = <T>(fn: () => Promise<T>) =>
    retryCall(fn, {
      signal: AbortSignal.timeout(30_000),
      maxDelayMs: 200,
      transient: isTransientStoreError,
    })

  return {
    isPushed: (sessionId) => pushed.has(sessionId),
    async audit(db) {
      const deadline = Date.now() + 120_000
      for (;;) {
        const due = await read(async () => {
          const r = await sql<{ n: number }>`
            select count(*)::int as n from webhook_deliveries
            where session_id = any(${sessions}::text[]) and state in ('pending', 'sending')
          `.execute(db)
          return r.rows[0]?.n ?? 0
        })
        if (due === 0 || Date.now() > deadline) break
        await new Promise((resolve) => setTimeout(resolve, 500))
      }
      const events = await read(async () => {
        const r = await sql<{ id: string }>`
          select 'msg_attempt_terminal_' || replace(id::text, '-', '') as id from attempts
          where session_id = any(${sessions}::text[]) and status = 'terminal'
          union all
          select 'msg_continuation_' || replace(cause_attempt_id::text, '-', '') from runs
          where session_id = any(${sessions}::text[]) and trigger_type = 'async_subagent_result'
        `.execute(db)
        return r.rows.map((row) => row.id)
      })
      const missing = events.filter((id) => !receiver.processed.has(id))
      return {
        ids: events.length,
        delivered: events.length - missing.length,
        missing: missing.length,
        bad_signature: receiver.requests.filter((r) => !r.verified).length,
        requests: receiver.requests.length,
        samples: missing.slice(0, 10),
      }
    },
    close: () => receiver.close(),
  }
}
