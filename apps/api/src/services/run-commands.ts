import { randomUUID } from 'node:crypto'
import {
  ContinuationLimits,
  type ClaimFence,
  type ContinuationClaim,
  type ContinuationConclusion,
  type DeliveredResult,
  type RunView,
} from '@baton/contracts'
import type { ApiMetrics, Logger } from '@baton/observability'
import { announceClaimable, type SettlementPublisher } from '@baton/queue'
import {
  claimContinuation,
  claimableSessions,
  createRun,
  deleteSession,
  endRun,
  getContinuation,
  getRun,
  renewRunLease,
  toDeliveryView,
  type ClaimedContinuation,
  type Db,
  type DeliveryOutcome,
  type EndRunOutcome,
  type RunEnd,
  type RunRecord,
} from '@baton/store'
import type { Refusal } from '../http/refusals.ts'
import type { Doorbell } from './bounded-wait.ts'
import { countDeliveries } from './service-metrics.ts'

/** The key of a session's claim bell: a `claimable` ring wakes only the claims of its session. */
export function claimKey(namespaceId: string, sessionId: string): string {
  return JSON.stringify([namespaceId, sessionId])
}

/** A run, and the results it consumed with their receipts (empty but for a consumption). */
export type RunOutcome =
  | { readonly kind: 'run'; readonly view: RunView; readonly consumed: readonly DeliveredResult[] }
  | Refusal
export type ClaimOutcome =
  { readonly kind: 'claimed'; readonly claim: ContinuationClaim } | { readonly kind: 'none' }
export type HeartbeatOutcome =
  { readonly kind: 'renewed'; readonly leaseExpiresAt: string } | Refusal
export type ConclusionOutcome =
  { readonly kind: 'concluded'; readonly conclusion: ContinuationConclusion } | Refusal

/**
 * The commands on runs and continuations, scoped by the caller's namespace: decide and record in
 * the ledger, then ring. A run's end reconciles the deliveries it held in the same transaction
 * (the store's `endRun`); when that admitted any, the session's claim bell rings (`claimable`),
 * which wakes that session's bounded claims in every API process and no others.
 */
export interface RunCommands {
  create(
    namespaceId: string,
    sessionId: string,
    input: { readonly consume: readonly string[]; readonly leaseMs?: number | undefined },
  ): Promise<RunOutcome>
  read(namespaceId: string, runId: string): Promise<RunOutcome>
  end(
    namespaceId: string,
    runId: string,
    status: RunEnd,
    consumed?: readonly string[],
  ): Promise<RunOutcome>
  /** Extends a host run's lease. */
  heartbeatRun(namespaceId: string, runId: string, leaseMs: number): Promise<HeartbeatOutcome>
  deleteSession(
    namespaceId: string,
    sessionId: string,
  ): Promise<{ readonly kind: 'deleted' } | Refusal>
  /** One bounded wait for the session's next admitted continuation; never a polling loop. */
  claim(input: {
    readonly namespaceId: string
    readonly sessionId: string
    readonly timeoutMs: number
    readonly leaseMs: number
    readonly signal: AbortSignal
  }): Promise<ClaimOutcome>
  /** Extends a claimed continuation's lease. */
  heartbeat(
    namespaceId: string,
    runId: string,
    fence: ClaimFence,
    leaseMs: number,
  ): Promise<HeartbeatOutcome>
  /** Completes or fails a claimed continuation: it is delivered, or suppressed. */
  concludeContinuation(
    namespaceId: string,
    runId: string,
    fence: ClaimFence,
    status: 'completed' | 'failed',
  ): Promise<ConclusionOutcome>
}

export function createRunCommands(deps: {
  readonly db: Db
  /** The claim bell, keyed by `claimKey`, rung by the settlement listener's `claimable` events. */
  readonly claimBell: Doorbell<unknown>
  readonly settlements: SettlementPublisher
  readonly logger: Logger
  readonly metrics?: ApiMetrics
}): RunCommands {
  const log = deps.logger.child({ component: 'run-commands' })

  /**
   * Rings the claim bell of every session whose deliveries became claimable. Every API process
   * (this one too) hears it from the stream and wakes that session's claims there.
   */
  async function announce(deliveries: readonly DeliveryOutcome[]): Promise<void> {
    for (const d of claimableSessions(deliveries))
      await announceClaimable(deps.settlements, d.attemptId, d, log)
  }

  /** After a run was abandoned (its lease expired): what it held may be claimable now. */
  async function announceAbandoned(namespaceId: string, run: RunRecord): Promise<void> {
    if (run.status !== 'abandoned') return
    const session = { namespaceId, sessionId: run.sessionId }
    await announceClaimable(deps.settlements, run.id, session, log)
  }

  async function ended(
    namespaceId: string,
    outcome: EndRunOutcome,
    runId: string,
  ): Promise<
    | {
        readonly kind: 'ended' | 'replayed'
        readonly run: RunRecord
        readonly consumed: readonly DeliveredResult[]
      }
    | Refusal
  > {
    countDeliveries(deps.metrics, outcome)
    switch (outcome.kind) {
      case 'ended':
        await announce(outcome.deliveries)
        return outcome
      case 'replayed':
        return outcome
      case 'missing':
        return { kind: 'run_not_found', runId }
      case 'not_active':
        await announceAbandoned(namespaceId, outcome.run)
        return { kind: 'run_not_active', runId, status: outcome.run.status }
      case 'stale_claim':
        return { kind: 'stale_claim', runId }
      case 'not_consumable':
        return { kind: 'not_consumable', attemptIds: outcome.attemptIds }
      default: {
        const unexpected: never = outcome
        throw new Error(`unexpected outcome ${JSON.stringify(unexpected)}`)
      }
    }
  }

  async function claimOnce(
    input: Parameters<RunCommands['claim']>[0],
    releaseLapsed: boolean,
  ): Promise<ClaimedContinuation | undefined> {
    return claimContinuation(deps.db, {
      namespaceId: input.namespaceId,
      sessionId: input.sessionId,
      claimToken: randomUUID(),
      leaseMs: input.leaseMs,
      releaseLapsed,
    })
  }

  async function renewed(
    namespaceId: string,
    runId: string,
    fence: ClaimFence | undefined,
    leaseMs: number,
  ): Promise<HeartbeatOutcome> {
    const outcome = await renewRunLease(deps.db, {
      namespaceId,
      runId,
      leaseMs,
      ...(fence === undefined ? {} : { fence }),
    })
    switch (outcome.kind) {
      case 'renewed':
        return { kind: 'renewed', leaseExpiresAt: outcome.leaseExpiresAt.toISOString() }
      case 'stale_claim':
        return { kind: 'stale_claim', runId }
      case 'not_active':
        await announceAbandoned(namespaceId, outcome.run)
        return { kind: 'run_not_active', runId, status: outcome.run.status }
      case 'missing':
        return { kind: 'run_not_found', runId }
      default: {
        const unexpected: never = outcome
        throw new Error(`unexpected outcome ${JSON.stringify(unexpected)}`)
      }
    }
  }

  return {
    async create(namespaceId, sessionId, input) {
      const outcome = await createRun(deps.db, {
        namespaceId,
        sessionId,
        runId: randomUUID(),
        consume: input.consume,
        leaseMs: input.leaseMs ?? ContinuationLimits.runLeaseMsDefault,
      })
      switch (outcome.kind) {
        case 'created':
          log.debug({ runId: outcome.run.id, sessionId }, 'run created')
          return { kind: 'run', view: toRunView(outcome.run), consumed: outcome.consumed }
        case 'session_deleted':
          return { kind: 'session_deleted', sessionId }
        case 'not_consumable':
          return { kind: 'not_consumable', attemptIds: outcome.attemptIds }
        default: {
          const unexpected: never = outcome
          throw new Error(`unexpected outcome ${JSON.stringify(unexpected)}`)
        }
      }
    },

    async read(namespaceId, runId) {
      const run = await getRun(deps.db, namespaceId, runId)
      return run === undefined
        ? { kind: 'run_not_found', runId }
        : { kind: 'run', view: toRunView(run), consumed: [] }
    },

    async end(namespaceId, runId, status, consumed) {
      const outcome = await endRun(deps.db, {
        namespaceId,
        runId,
        status,
        ...(consumed === undefined ? {} : { consumed }),
      })
      const answer = await ended(namespaceId, outcome, runId)
      return 'run' in answer
        ? { kind: 'run', view: toRunView(answer.run), consumed: answer.consumed }
        : answer
    },

    heartbeatRun: (namespaceId, runId, leaseMs) => renewed(namespaceId, runId, undefined, leaseMs),

    async deleteSession(namespaceId, sessionId) {
      const outcome = await deleteSession(deps.db, { namespaceId, sessionId })
      if (outcome === 'missing') return { kind: 'session_not_found', sessionId }
      log.info({ sessionId }, 'session deleted')
      return { kind: 'deleted' }
    },

    async claim(input) {
      // Waits for the session's bell, never for a clock: subscribe, then claim, then wait, until
      // the bound. Only the first try releases the session's lapsed claims; a ring means whoever
      // rang already made something claimable.
      const deadline = Date.now() + input.timeoutMs
      const key = claimKey(input.namespaceId, input.sessionId)
      for (let first = true; ; first = false) {
        const subscription = deps.claimBell.subscribe(key)
        try {
          const claimed = await claimOnce(input, first)
          if (claimed !== undefined) {
            deps.metrics?.continuationClaims.inc()
            return { kind: 'claimed', claim: toClaim(claimed) }
          }
          const remaining = deadline - Date.now()
          if (remaining <= 0) return { kind: 'none' }
          if ((await subscription.wait(remaining, input.signal)) !== 'rang') return { kind: 'none' }
        } finally {
          subscription.cancel()
        }
      }
    },

    heartbeat: (namespaceId, runId, fence, leaseMs) => renewed(namespaceId, runId, fence, leaseMs),

    async concludeContinuation(namespaceId, runId, fence, status) {
      const outcome = await endRun(deps.db, { namespaceId, runId, status, fence })
      const answer = await ended(namespaceId, outcome, runId)
      if (!('run' in answer)) return answer
      // Its end reconciled the delivery; reload it for the answer.
      const continuation = await getContinuation(deps.db, namespaceId, { runId })
      if (continuation === undefined) return { kind: 'run_not_found', runId }
      log.info({ runId, attemptId: continuation.attemptId, status }, 'continuation concluded')
      return {
        kind: 'concluded',
        conclusion: {
          runId,
          attemptId: continuation.attemptId,
          receipt: continuation.receipt,
          delivery: toDeliveryView(continuation),
          replayed: answer.kind === 'replayed',
        },
      }
    },
  }
}

export function toRunView(run: RunRecord): RunView {
  return {
    runId: run.id,
    sessionId: run.sessionId,
    triggerType: run.triggerType,
    status: run.status,
    causeAttemptId: run.causeAttemptId,
    createdAt: run.createdAt.toISOString(),
    settledAt: run.endedAt?.toISOString() ?? null,
    leaseExpiresAt: run.status === 'active' ? (run.leaseExpiresAt?.toISOString() ?? null) : null,
  }
}

function toClaim(claimed: ClaimedContinuation): ContinuationClaim {
  return {
    runId: claimed.runId,
    attemptId: claimed.attemptId,
    receipt: claimed.receipt,
    input: claimed.input,
    content: claimed.content,
    claim: {
      claimToken: claimed.fence.claimToken,
      generation: claimed.fence.generation,
      leaseExpiresAt: claimed.leaseExpiresAt.toISOString(),
    },
  }
}
