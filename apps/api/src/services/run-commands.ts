import { randomUUID } from 'node:crypto'
import type { ClaimFence, ContinuationClaim, ContinuationSettled, RunView } from '@baton/contracts'
import type { ApiMetrics, Logger } from '@baton/observability'
import { announceSettled, type SettlementPublisher } from '@baton/queue'
import {
  claimContinuation,
  createRun,
  deleteSession,
  getContinuation,
  getRun,
  renewContinuationClaim,
  settleRun,
  toDeliveryView,
  type ClaimedContinuation,
  type Db,
  type RunRecord,
  type SettleRunOutcome,
} from '@baton/store'
import type { Refusal } from '../http/refusals.ts'
import type { SettledDoorbell } from './bounded-wait.ts'
import { countDeliveries } from './service-metrics.ts'

/** The doorbell key every claim waits on: any settlement may have made a continuation claimable. */
export const CLAIMABLE = 'continuations'

export type RunOutcome = { readonly kind: 'run'; readonly view: RunView } | Refusal
export type ClaimOutcome =
  { readonly kind: 'claimed'; readonly claim: ContinuationClaim } | { readonly kind: 'none' }
export type HeartbeatOutcome =
  { readonly kind: 'renewed'; readonly leaseExpiresAt: string } | Refusal
export type ContinuationOutcome =
  { readonly kind: 'settled'; readonly settled: ContinuationSettled } | Refusal

/**
 * The commands on runs and continuations, scoped by the caller's namespace: decide and record in
 * the ledger, then ring. A run's settlement reconciles the deliveries it held in the same
 * transaction (the store's `settleRun`); any that became claimable ring the settlement bell of
 * their attempt, which wakes bounded claims in every API process.
 */
export interface RunCommands {
  create(namespaceId: string, sessionId: string, consume: readonly string[]): Promise<RunOutcome>
  read(namespaceId: string, runId: string): Promise<RunOutcome>
  settle(
    namespaceId: string,
    runId: string,
    status: 'completed' | 'failed' | 'cancelled',
    consumed?: readonly string[],
  ): Promise<RunOutcome>
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
  heartbeat(
    namespaceId: string,
    runId: string,
    fence: ClaimFence,
    leaseMs: number,
  ): Promise<HeartbeatOutcome>
  settleContinuation(
    namespaceId: string,
    runId: string,
    fence: ClaimFence,
    status: 'completed' | 'failed',
  ): Promise<ContinuationOutcome>
}

export function createRunCommands(deps: {
  readonly db: Db
  readonly claimBell: SettledDoorbell
  readonly settlements: SettlementPublisher
  readonly logger: Logger
  readonly metrics?: ApiMetrics
}): RunCommands {
  const log = deps.logger.child({ component: 'run-commands' })

  /** Rings for every delivery a settlement made claimable (here and in other API processes). */
  async function announce(outcome: SettleRunOutcome): Promise<void> {
    countDeliveries(deps.metrics, outcome)
    if (outcome.kind !== 'settled') return
    const claimable = outcome.deliveries.filter((d) => d.action === 'admitted')
    for (const { attemptId } of claimable) {
      deps.claimBell.ring(CLAIMABLE)
      await announceSettled(deps.settlements, attemptId, log)
    }
  }

  function settled(
    outcome: SettleRunOutcome,
    runId: string,
  ): { readonly kind: 'settled' | 'replayed'; readonly run: RunRecord } | Refusal {
    switch (outcome.kind) {
      case 'settled':
      case 'replayed':
        return outcome
      case 'missing':
        return { kind: 'run_not_found', runId }
      case 'not_active':
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
  ): Promise<ClaimedContinuation | undefined> {
    return claimContinuation(deps.db, {
      namespaceId: input.namespaceId,
      sessionId: input.sessionId,
      ownerId: randomUUID(),
      leaseMs: input.leaseMs,
    })
  }

  return {
    async create(namespaceId, sessionId, consume) {
      const outcome = await createRun(deps.db, {
        namespaceId,
        sessionId,
        runId: randomUUID(),
        consume,
      })
      switch (outcome.kind) {
        case 'created':
          log.debug({ runId: outcome.run.id, sessionId }, 'run created')
          return { kind: 'run', view: toRunView(outcome.run) }
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
        : { kind: 'run', view: toRunView(run) }
    },

    async settle(namespaceId, runId, status, consumed) {
      const outcome = await settleRun(deps.db, {
        namespaceId,
        runId,
        status,
        ...(consumed === undefined ? {} : { consumed }),
      })
      await announce(outcome)
      const answer = settled(outcome, runId)
      return 'run' in answer ? { kind: 'run', view: toRunView(answer.run) } : answer
    },

    async deleteSession(namespaceId, sessionId) {
      const outcome = await deleteSession(deps.db, { namespaceId, sessionId })
      if (outcome === 'missing') return { kind: 'session_not_found', sessionId }
      log.info({ sessionId }, 'session deleted')
      return { kind: 'deleted' }
    },

    async claim(input) {
      // Waits for a bell, never for a clock: subscribe, then read, then wait, until the bound.
      const deadline = Date.now() + input.timeoutMs
      for (;;) {
        const subscription = deps.claimBell.subscribe(CLAIMABLE)
        try {
          const claimed = await claimOnce(input)
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

    async heartbeat(namespaceId, runId, fence, leaseMs) {
      const outcome = await renewContinuationClaim(deps.db, {
        namespaceId,
        runId,
        fence: { ownerId: fence.claimToken, generation: fence.generation },
        leaseMs,
      })
      switch (outcome.kind) {
        case 'renewed':
          return { kind: 'renewed', leaseExpiresAt: outcome.leaseExpiresAt.toISOString() }
        case 'stale_claim':
          return { kind: 'stale_claim', runId }
        case 'missing':
          return { kind: 'run_not_found', runId }
        default: {
          const unexpected: never = outcome
          throw new Error(`unexpected outcome ${JSON.stringify(unexpected)}`)
        }
      }
    },

    async settleContinuation(namespaceId, runId, fence, status) {
      const outcome = await settleRun(deps.db, {
        namespaceId,
        runId,
        status,
        fence: { ownerId: fence.claimToken, generation: fence.generation },
      })
      countDeliveries(deps.metrics, outcome)
      const answer = settled(outcome, runId)
      if (!('run' in answer)) return answer
      // The settlement reconciled the delivery; reload it for the answer.
      const continuation = await getContinuation(deps.db, namespaceId, { runId })
      if (continuation === undefined) return { kind: 'run_not_found', runId }
      log.info({ runId, attemptId: continuation.attemptId, status }, 'continuation settled')
      return {
        kind: 'settled',
        settled: {
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
    settledAt: run.settledAt?.toISOString() ?? null,
  }
}

function toClaim(claimed: ClaimedContinuation): ContinuationClaim {
  return {
    runId: claimed.runId,
    attemptId: claimed.attemptId,
    receipt: claimed.receipt,
    input: claimed.input,
    claim: {
      claimToken: claimed.ownerId,
      generation: claimed.generation,
      leaseExpiresAt: claimed.leaseExpiresAt.toISOString(),
    },
  }
}
