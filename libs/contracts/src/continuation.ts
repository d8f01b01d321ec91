import { z } from 'zod'
import { Limits, uuidSchema } from './delegation.ts'

/**
 * Runs and continuations: a session's parent turns, and the exactly-once hand-back of a child's
 * result to the parent that delegated it (see the README's "Continuations").
 */
export const RUN_TRIGGERS = ['user', 'async_subagent_result', 'explicit'] as const
export type RunTrigger = (typeof RUN_TRIGGERS)[number]
export const RUN_STATUSES = ['pending', 'active', 'completed', 'failed', 'cancelled'] as const
export type RunStatus = (typeof RUN_STATUSES)[number]

/** Where an attempt's result is on its way back to its parent. */
export const DELIVERY_STATES = ['pending', 'claimed', 'delivered', 'suppressed'] as const
export type DeliveryState = (typeof DELIVERY_STATES)[number]

/** Why a result was not handed to an automatic continuation; its evidence is kept. */
export const SUPPRESSION_REASONS = [
  'parent_cancelled',
  'session_deleted',
  'shutdown',
  'consumer_failed',
  'consumer_cancelled',
] as const
export type SuppressionReason = (typeof SUPPRESSION_REASONS)[number]

export const ContinuationLimits = {
  leaseMsMin: 1000,
  leaseMsMax: 600_000,
  consumeMax: 100,
} as const

/** `POST /v1/sessions/:sessionId/runs`: a user run, or with `consume` an explicit run. */
export const createRunRequestSchema = z.strictObject({
  consume: z.array(uuidSchema).min(1).max(ContinuationLimits.consumeMax).optional(),
})
export type CreateRunRequest = z.infer<typeof createRunRequestSchema>

/** `POST /v1/runs/:runId/complete`: the held results the run consumed itself (by `wait`). */
export const completeRunRequestSchema = z.strictObject({
  consumed: z.array(uuidSchema).min(1).max(ContinuationLimits.consumeMax).optional(),
})

const leaseMsSchema = z
  .number()
  .int()
  .min(ContinuationLimits.leaseMsMin)
  .max(ContinuationLimits.leaseMsMax)

/** `POST /v1/sessions/:sessionId/continuations/claim`: one bounded wait for the next one. */
export const claimRequestSchema = z.strictObject({
  timeoutMs: z.number().int().min(0).max(Limits.waitTimeoutMsMax),
  leaseMs: leaseMsSchema,
})

/** The fence of a claim, sent back with every heartbeat and settlement. */
export const claimFenceSchema = z.strictObject({
  claimToken: uuidSchema,
  generation: z.number().int().min(1),
})
export type ClaimFence = z.infer<typeof claimFenceSchema>

export const heartbeatRequestSchema = claimFenceSchema.extend({ leaseMs: leaseMsSchema })

export interface RunView {
  readonly runId: string
  readonly sessionId: string
  readonly triggerType: RunTrigger
  readonly status: RunStatus
  /** For an `async_subagent_result` run: the attempt whose result it carries. */
  readonly causeAttemptId: string | null
  readonly createdAt: string
  readonly settledAt: string | null
}

/** An attempt's delivery to its parent run (present on views of attempts with a parent run). */
export interface DeliveryView {
  readonly state: DeliveryState
  /** The digest the receipt binds: SHA-256 of the canonical durable input (`continuationDigest`). */
  readonly receiptDigest: string
  /** The run that consumes or consumed it: the parent while it is held for it, or a continuation. */
  readonly consumingRunId: string | null
  readonly suppression: {
    readonly reason: SuppressionReason
    readonly runId: string | null
  } | null
}

/**
 * A claimed continuation. `receipt` and `input` are RFC 8785 canonical JSON texts exactly as the
 * ledger stored them: `continuationDigest(input)` equals the receipt's `inputDigest`.
 */
export interface ContinuationClaim {
  readonly runId: string
  readonly attemptId: string
  readonly receipt: string
  readonly input: string
  readonly claim: ClaimFence & { readonly leaseExpiresAt: string }
}

/** The answer of a continuation's `complete` or `fail`: the receipt, and where delivery stands. */
export interface ContinuationSettled {
  readonly runId: string
  readonly attemptId: string
  readonly receipt: string
  readonly delivery: DeliveryView
  readonly replayed: boolean
}
