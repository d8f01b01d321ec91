import { z } from 'zod'
import { Limits, isoTimeSchema, uuidSchema } from './delegation.ts'

/**
 * Runs and continuations: a session's parent turns, and the exactly-once hand-back of a child's
 * result to the parent that delegated it (see the README's "Continuations").
 */
export const RUN_TRIGGERS = ['user', 'async_subagent_result', 'explicit'] as const
export type RunTrigger = (typeof RUN_TRIGGERS)[number]
/** `abandoned`: a host run whose lease expired before its host ended it. */
export const RUN_STATUSES = [
  'pending',
  'active',
  'completed',
  'failed',
  'cancelled',
  'abandoned',
] as const
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
  /** A continuation nobody claimed within the reconciler's `CONTINUATION_UNCLAIMED_MS`. */
  'unclaimed',
] as const
export type SuppressionReason = (typeof SUPPRESSION_REASONS)[number]

export const ContinuationLimits = {
  leaseMsMin: 1000,
  leaseMsMax: 600_000,
  /** The lease of a run created without `leaseMs`. */
  runLeaseMsDefault: 600_000,
  consumeMax: 100,
} as const

const leaseMsSchema = z
  .number()
  .int()
  .min(ContinuationLimits.leaseMsMin)
  .max(ContinuationLimits.leaseMsMax)

/**
 * `POST /v1/sessions/:sessionId/runs`: a user run, or with `consume` an explicit run. `leaseMs`:
 * how long the run lives without a heartbeat (default `runLeaseMsDefault`).
 */
export const createRunRequestSchema = z.strictObject({
  consume: z.array(uuidSchema).min(1).max(ContinuationLimits.consumeMax).optional(),
  leaseMs: leaseMsSchema.optional(),
})
export type CreateRunRequest = z.infer<typeof createRunRequestSchema>

/** `POST /v1/runs/:runId/heartbeat`: extend a host run's lease by `leaseMs` from now. */
export const runHeartbeatRequestSchema = z.strictObject({ leaseMs: leaseMsSchema })

/** `POST /v1/runs/:runId/complete`: the held results the run consumed itself (by `wait`). */
export const completeRunRequestSchema = z.strictObject({
  consumed: z.array(uuidSchema).min(1).max(ContinuationLimits.consumeMax).optional(),
})

/**
 * `POST /v1/runs/:runId/cancel`: with `cascade`, every attempt below the run that has not
 * finished (its children, and theirs) is cancelled too.
 */
export const cancelRunRequestSchema = z.strictObject({ cascade: z.boolean().optional() })
export type CancelRunRequest = z.infer<typeof cancelRunRequestSchema>

/** `POST /v1/sessions/:sessionId/continuations/claim`: one bounded wait for the next one. */
export const claimRequestSchema = z.strictObject({
  timeoutMs: z.number().int().min(0).max(Limits.waitTimeoutMsMax),
  leaseMs: leaseMsSchema,
})

/** The fence of a claim, sent back with every heartbeat and conclusion (complete, fail). */
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
    /** When the run ended (completed, failed, cancelled or abandoned); null while it lives. */
    settledAt: isoTimeSchema.nullable(),
    /** While the run is active: when its lease ends unless renewed (database clock). */
    leaseExpiresAt: isoTimeSchema.nullable(),
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

const byteCount = z.number().int().min(0)

/**
 * A result's complete content as a delivery carries it, resolved from the ledger when it is
 * delivered (never copied into the input): `inline` and `artifact` carry the text, verified
 * against the digest the attempt's terminal fingerprint binds; `expired` is the summary of an
 * artifact whose retention ended (its content is never served after its deadline); `corrupt` says
 * the stored content no longer matches that digest (it is not served); `unavailable` is a result
 * recorded before artifacts existed, of which only a preview was kept.
 */
export const deliveredContentSchema = z
  .discriminatedUnion('kind', [
    z.object({ kind: z.literal('inline'), text: z.string() }),
    z.object({
      kind: z.literal('artifact'),
      artifactId: z.uuid(),
      bytes: byteCount,
      digest: z.string(),
      text: z.string(),
    }),
    z.object({
      kind: z.literal('expired'),
      artifactId: z.uuid(),
      bytes: byteCount,
      digest: z.string(),
    }),
    z.object({
      kind: z.literal('corrupt'),
      artifactId: z.uuid().nullable(),
      bytes: byteCount,
      digest: z.string(),
    }),
    z.object({ kind: z.literal('unavailable'), bytes: byteCount, preview: z.string() }),
  ])
  .meta({ id: 'DeliveredContent' })
export type DeliveredContent = z.infer<typeof deliveredContentSchema>

/**
 * A result as every consumption delivers it (a claim, a held result its run consumed, an explicit
 * run): `receipt` and `input` are RFC 8785 canonical JSON texts exactly as the ledger stored them,
 * so `continuationDigest(input)` equals the receipt's `inputDigest`; the input names its content
 * by size and digest, and `content` is that content, resolved now.
 */
export const deliveredResultSchema = z
  .object({
    attemptId: z.uuid(),
    receipt: z.string(),
    input: z.string(),
    content: deliveredContentSchema,
  })
  .meta({ id: 'DeliveredResult' })
export type DeliveredResult = z.infer<typeof deliveredResultSchema>

/** A claimed continuation: its run, the delivered result, and the claim's fence and lease. */
export const continuationClaimSchema = deliveredResultSchema
  .extend({
    runId: z.uuid(),
    claim: z.object({
      claimToken: z.uuid(),
      generation: z.number().int().min(1),
      leaseExpiresAt: isoTimeSchema,
    }),
  })
  .meta({ id: 'ContinuationClaim' })
export type ContinuationClaim = z.infer<typeof continuationClaimSchema>

/**
 * The answer of a run's creation and completion: the run, and the results it consumed with their
 * receipts — for an explicit run, those it took; for a completion, the held results it named.
 */
export const runConsumptionSchema = runViewSchema
  .extend({ consumed: z.array(deliveredResultSchema) })
  .meta({ id: 'RunConsumption' })
export type RunConsumption = z.infer<typeof runConsumptionSchema>

/** The answer of a run's or a claim's heartbeat: the lease now ends at `leaseExpiresAt`. */
export const runLeaseSchema = z.object({ runId: z.uuid(), leaseExpiresAt: isoTimeSchema })
export type RunLease = z.infer<typeof runLeaseSchema>

/**
 * The answer of a continuation's `complete` or `fail` (its conclusion): the receipt, and where
 * delivery stands.
 */
export const continuationConclusionSchema = z
  .object({
    runId: z.uuid(),
    attemptId: z.uuid(),
    receipt: z.string(),
    delivery: deliveryViewSchema,
    replayed: z.boolean(),
  })
  .meta({ id: 'ContinuationConclusion' })
export type ContinuationConclusion = z.infer<typeof continuationConclusionSchema>

/** The typed cause a receipt binds (canonical JSON, members in this key order). */
export interface ContinuationCause {
  readonly agentId: string
  readonly attemptId: string
  readonly parentRunId: string
  readonly resultBytes: number
  readonly resultDigest: string
  readonly sessionId: string
  readonly traceId: string | null
}

/** The receipt of a continuation's admission (`receipt`, canonical JSON text, parsed). */
export interface ContinuationReceipt {
  readonly attemptId: string
  readonly cause: ContinuationCause
  /** The input's size in UTF-8 bytes, and `continuationDigest` of it. */
  readonly inputBytes: number
  readonly inputDigest: string
}

/**
 * How a continuation's canonical input names its result's content: `inline` holds it; `artifact`
 * refers to it by id, size and digest (the delivery's `content` carries it; an input admitted
 * before references existed holds it as `base64` instead of the id); `expired` and `unavailable`
 * are summaries kept by inputs admitted before references existed, or before artifacts.
 */
export type DurableInputContent =
  | { readonly kind: 'inline'; readonly text: string }
  | {
      readonly kind: 'artifact'
      readonly artifactId?: string
      readonly base64?: string
      readonly bytes: number
      readonly digest: string
    }
  | { readonly kind: 'expired'; readonly bytes: number; readonly digest: string }
  | { readonly kind: 'unavailable'; readonly bytes: number; readonly preview: string }

/** A continuation's canonical durable input (`input`, canonical JSON text, parsed). */
export interface DurableInput {
  readonly cause: ContinuationCause
  readonly result: {
    readonly content: DurableInputContent
    readonly failureCategory: string | null
    readonly stopReason: string
  }
}
