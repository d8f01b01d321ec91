import { z } from 'zod'
import { Limits, isoTimeSchema, uuidSchema } from './delegation.ts'

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

export const runViewSchema = z
  .object({
    runId: z.uuid(),
    sessionId: z.string(),
    triggerType: z.enum(RUN_TRIGGERS),
    status: z.enum(RUN_STATUSES),
    /** For an `async_subagent_result` run: the attempt whose result it carries. */
    causeAttemptId: z.uuid().nullable(),
    createdAt: isoTimeSchema,
    settledAt: isoTimeSchema.nullable(),
  })
  .meta({ id: 'RunView' })
export type RunView = z.infer<typeof runViewSchema>

/** An attempt's delivery to its parent run (present on views of attempts with a parent run). */
export const deliveryViewSchema = z
  .object({
    state: z.enum(DELIVERY_STATES),
    /** The digest the receipt binds: SHA-256 of the canonical durable input (`continuationDigest`). */
    receiptDigest: z.string(),
    /** The run that consumes or consumed it: the parent while it is held for it, or a continuation. */
    consumingRunId: z.uuid().nullable(),
    suppression: z
      .object({ reason: z.enum(SUPPRESSION_REASONS), runId: z.uuid().nullable() })
      .nullable(),
  })
  .meta({ id: 'DeliveryView' })
export type DeliveryView = z.infer<typeof deliveryViewSchema>

/**
 * A claimed continuation. `receipt` and `input` are RFC 8785 canonical JSON texts exactly as the
 * ledger stored them: `continuationDigest(input)` equals the receipt's `inputDigest`.
 */
export const continuationClaimSchema = z
  .object({
    runId: z.uuid(),
    attemptId: z.uuid(),
    receipt: z.string(),
    input: z.string(),
    claim: z.object({
      claimToken: z.uuid(),
      generation: z.number().int().min(1),
      leaseExpiresAt: isoTimeSchema,
    }),
  })
  .meta({ id: 'ContinuationClaim' })
export type ContinuationClaim = z.infer<typeof continuationClaimSchema>

/** The answer of a continuation's heartbeat: its lease now ends at `leaseExpiresAt`. */
export const continuationLeaseSchema = z.object({ runId: z.uuid(), leaseExpiresAt: isoTimeSchema })
export type ContinuationLease = z.infer<typeof continuationLeaseSchema>

/** The answer of a continuation's `complete` or `fail`: the receipt, and where delivery stands. */
export const continuationSettledSchema = z
  .object({
    runId: z.uuid(),
    attemptId: z.uuid(),
    receipt: z.string(),
    delivery: deliveryViewSchema,
    replayed: z.boolean(),
  })
  .meta({ id: 'ContinuationSettled' })
export type ContinuationSettled = z.infer<typeof continuationSettledSchema>
