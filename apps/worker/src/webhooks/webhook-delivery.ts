import type { WebhookDestinationPolicy, WebhookPayload } from '@baton/contracts'
import type { Logger } from '@baton/observability'
import { announceClaimable, type SettlementPublisher } from '@baton/queue'
import {
  claimContinuation,
  claimableSessions,
  endRun,
  getAttempt,
  getContinuation,
  releaseContinuationClaim,
  settleWebhookDelivery,
  takeWebhookDeliveries,
  toAttemptView,
  type ClaimedContinuation,
  type Db,
  type TakenWebhookDelivery,
  type WebhookTryEnd,
} from '@baton/store'
import { createWebhookSender, type SendResult, type WebhookSender } from './webhook-sender.ts'

/** The worker's webhook settings (`WEBHOOK_*`). */
export interface WebhookDeliveryConfig {
  readonly policy: WebhookDestinationPolicy
  /** Bound of one POST: connecting, the answer's headers, its body, and the whole call. */
  readonly timeoutMs: number
  /** The request body's bound; a continuation's content above it is left out (`content: null`). */
  readonly maxBodyBytes: number
  /** Tries of one delivery before it is recorded `failed`. */
  readonly maxTries: number
  /** Age (since the event) past which a delivery is recorded `failed` instead of tried again. */
  readonly maxAgeMs: number
  /** The first retry's delay; each next one doubles, up to `retryMaxMs`, with jitter. */
  readonly retryBaseMs: number
  readonly retryMaxMs: number
  /** How often the worker looks for due deliveries. */
  readonly pollIntervalMs: number
  /** Deliveries one pass takes and sends at once. */
  readonly concurrency: number
}

export interface WebhookDelivery {
  /** One pass now: take what is due, send it, record each try. */
  runOnce(): Promise<number>
  start(): void
  /** Stops taking; tries under way are abandoned (their leases end, another worker retries). */
  stop(): Promise<void>
}

/**
 * Push delivery, run by every worker: takes due deliveries from the ledger's outbox under a fenced
 * lease and POSTs each to its endpoint. A continuation's delivery is a delivery claim whose
 * consumer is the endpoint: the worker claims that continuation (`claimContinuation`), a 2xx
 * completes the claim (the continuation is delivered, with its receipt), anything else releases
 * it (`releaseContinuationClaim`), and a worker that dies mid-try leaves a claim the next try
 * takes again once its lease ended. Every try of a delivery carries the same `webhook-id`.
 */
export function createWebhookDelivery(deps: {
  readonly db: Db
  readonly publisher: SettlementPublisher
  readonly ownerId: string
  readonly config: WebhookDeliveryConfig
  readonly logger: Logger
  readonly sender?: WebhookSender
}): WebhookDelivery {
  const { db, config, logger: log } = deps
  const sender =
    deps.sender ?? createWebhookSender({ policy: config.policy, timeoutMs: config.timeoutMs })
  /** The delivery's lease: the claim, one bounded POST and the record of its end, with room. */
  const leaseMs = 2 * config.timeoutMs + 10_000
  /** The continuation claim's lease ends before the delivery's, so the next try finds it lapsed. */
  const claimLeaseMs = config.timeoutMs + 5_000
  const stopping = new AbortController()
  let timer: NodeJS.Timeout | undefined
  let inFlight: Promise<number> | undefined

  async function pass(): Promise<number> {
    let sent = 0
    for (;;) {
      if (stopping.signal.aborted) return sent
      const taken = await takeWebhookDeliveries(db, {
        ownerId: deps.ownerId,
        leaseMs,
        limit: config.concurrency,
        maxAgeMs: config.maxAgeMs,
      })
      await Promise.all(taken.map((d) => deliver(d)))
      sent += taken.length
      if (taken.length < config.concurrency) return sent
    }
  }

  async function deliver(d: TakenWebhookDelivery): Promise<void> {
    const dlog = log.child({ webhookId: d.id, attemptId: d.attemptId, tries: d.tries })
    try {
      const end = await tryOnce(d)
      const settled = await settleWebhookDelivery(db, d.id, d.fence, end)
      const level = end.kind === 'delivered' || end.kind === 'retry' ? 'debug' : 'info'
      dlog[level]({ end, settled }, 'webhook try ended')
    } catch (error) {
      // Its lease ends and a later pass tries it again.
      dlog.warn({ err: error }, 'webhook try failed; retried after its lease')
    }
  }

  async function tryOnce(d: TakenWebhookDelivery): Promise<WebhookTryEnd> {
    if (d.endpoint === null)
      return { kind: 'failed', status: null, error: 'unregistered: the webhook was removed' }
    if (d.expired || d.tries > config.maxTries)
      return { kind: 'failed', status: null, error: 'out of tries or age' }
    if (d.eventType === 'attempt.terminal') {
      const record = await getAttempt(db, d.attemptId, { namespaceId: d.namespaceId })
      if (record === undefined) return { kind: 'failed', status: null, error: 'attempt missing' }
      const body = bodyOf({
        type: 'attempt.terminal',
        timestamp: d.createdAt.toISOString(),
        data: toAttemptView(record),
      })
      if (body === undefined) return { kind: 'failed', status: null, error: 'body too large' }
      return ended(d, await sender.send(d.endpoint, d.id, body, stopping.signal))
    }
    const claimed = await claimContinuation(db, {
      namespaceId: d.namespaceId,
      sessionId: d.sessionId,
      attemptId: d.attemptId,
      claimToken: `webhook:${d.id}:${d.fence.generation}`,
      leaseMs: claimLeaseMs,
      releaseLapsed: true,
    })
    if (claimed === undefined) return unclaimable(d)
    const body = continuationBody(d, claimed)
    const sent =
      body === undefined
        ? ({ kind: 'refused', status: null, error: 'body too large' } as const)
        : await sender.send(d.endpoint, d.id, body, stopping.signal)
    if (sent.kind === 'acknowledged') {
      const outcome = await endRun(db, {
        namespaceId: d.namespaceId,
        runId: claimed.runId,
        status: 'completed',
        fence: claimed.fence,
      })
      if (outcome.kind === 'ended' || outcome.kind === 'replayed') return ended(d, sent)
      // The claim was lost before its acknowledgement was recorded: try again (same id).
      return retry(d, sent.status, `claim lost before the acknowledgement was recorded`)
    }
    const released = await releaseContinuationClaim(db, {
      namespaceId: d.namespaceId,
      runId: claimed.runId,
      fence: claimed.fence,
    })
    if (released.kind === 'released') {
      for (const s of claimableSessions(released.deliveries))
        await announceClaimable(deps.publisher, s.attemptId, s, log)
    }
    return ended(d, sent)
  }

  /** Why a delivery's continuation could not be claimed, from its state now. */
  async function unclaimable(d: TakenWebhookDelivery): Promise<WebhookTryEnd> {
    const continuation = await getContinuation(db, d.namespaceId, { attemptId: d.attemptId })
    const state = continuation?.state ?? 'missing'
    if (state === 'delivered' || state === 'suppressed' || state === 'missing')
      return { kind: 'superseded', error: `continuation ${state} by other means` }
    // Held by another claim (a host's, or this delivery's own lapsed one not yet released).
    return retry(d, null, `continuation ${state}: not claimable now`)
  }

  function continuationBody(d: TakenWebhookDelivery, c: ClaimedContinuation): string | undefined {
    const payload = (content: typeof c.content | null): WebhookPayload => ({
      type: 'continuation.admitted',
      timestamp: d.createdAt.toISOString(),
      data: {
        runId: c.runId,
        sessionId: d.sessionId,
        attemptId: c.attemptId,
        receipt: c.receipt,
        input: c.input,
        content,
      },
    })
    return bodyOf(payload(c.content)) ?? bodyOf(payload(null))
  }

  function bodyOf(payload: WebhookPayload): string | undefined {
    const body = JSON.stringify(payload)
    return Buffer.byteLength(body) <= config.maxBodyBytes ? body : undefined
  }

  function ended(d: TakenWebhookDelivery, sent: SendResult): WebhookTryEnd {
    switch (sent.kind) {
      case 'acknowledged':
        return { kind: 'delivered', status: sent.status }
      case 'refused':
        return { kind: 'failed', status: sent.status, error: sent.error }
      case 'unacknowledged':
        return retry(d, sent.status, sent.error)
      default: {
        const unexpected: never = sent
        throw new Error(`unexpected send result ${JSON.stringify(unexpected)}`)
      }
    }
  }

  function retry(d: TakenWebhookDelivery, status: number | null, error: string): WebhookTryEnd {
    if (d.tries >= config.maxTries) return { kind: 'failed', status, error }
    return { kind: 'retry', retryInMs: retryDelayMs(d.tries, config), status, error }
  }

  function run(): Promise<number> {
    inFlight ??= pass().finally(() => {
      inFlight = undefined
    })
    return inFlight
  }

  return {
    runOnce: run,
    start() {
      timer ??= setInterval(() => {
        if (inFlight !== undefined) return
        run().catch((error: unknown) => log.warn({ err: error }, 'webhook pass failed'))
      }, config.pollIntervalMs)
    },
    async stop() {
      if (timer !== undefined) clearInterval(timer)
      timer = undefined
      stopping.abort()
      await inFlight?.catch(() => undefined)
      await sender.close()
    },
  }
}

/**
 * The delay before try `tries + 1`: exponential from `retryBaseMs`, capped at `retryMaxMs`, with
 * "equal jitter" (between half and all of it), so endpoints that failed together are not retried
 * together.
 */
export function retryDelayMs(
  tries: number,
  config: Pick<WebhookDeliveryConfig, 'retryBaseMs' | 'retryMaxMs'>,
  random: () => number = Math.random,
): number {
  const exponential = Math.min(config.retryMaxMs, config.retryBaseMs * 2 ** Math.max(0, tries - 1))
  return Math.round(exponential / 2 + (random() * exponential) / 2)
}
