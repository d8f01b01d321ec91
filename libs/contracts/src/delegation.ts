import { z } from 'zod'
import { errorBodySchema } from './errors.ts'
import { storableText } from './storable-text.ts'

/** Limits that bound what a caller may send. The API enforces them before anything is written. */
export const Limits = {
  promptTextChars: 100_000,
  promptBlocks: 64,
  subagentNameChars: 64,
  sessionIdChars: 128,
  waitTimeoutMsMax: 60_000,
  cancelReasonChars: 500,
} as const

export const sessionIdSchema = z
  .string()
  .min(1)
  .max(Limits.sessionIdChars)
  .regex(/^[A-Za-z0-9._:-]+$/, 'letters, digits, ".", "_", ":" and "-" only')

export const uuidSchema = z.uuid()

/** A time as the API writes it: an ISO 8601 UTC timestamp (`Date.prototype.toISOString`). */
export const isoTimeSchema = z.iso.datetime()

export const subagentNameSchema = z
  .string()
  .min(1)
  .max(Limits.subagentNameChars)
  .regex(/^[a-z0-9][a-z0-9._-]*$/, 'lowercase letters, digits, ".", "_" and "-"')

export const textBlockSchema = z.strictObject({
  type: z.literal('text'),
  text: storableText().min(1).max(Limits.promptTextChars),
})

/**
 * A prompt: a string with some non-whitespace text, or a non-empty array of non-empty text blocks.
 * Stored exactly as sent (never trimmed): whitespace can matter to a child, and `" x"` and `"x"`
 * are different requests for idempotency.
 */
export const promptSchema = z.union([
  storableText()
    .max(Limits.promptTextChars)
    .refine((text) => text.trim() !== '', 'prompt must not be empty or only whitespace'),
  z.array(textBlockSchema).min(1, 'prompt must have at least one block').max(Limits.promptBlocks),
])
export type Prompt = z.infer<typeof promptSchema>

/**
 * Host metadata a caller may attach. Only these keys exist: arbitrary caller-supplied keys are
 * rejected, so a model cannot smuggle host-level instructions through metadata.
 */
export const delegationMetadataSchema = z.strictObject({
  traceId: storableText().min(1).max(128).optional(),
  labels: z.record(storableText().min(1).max(64), storableText().max(256)).optional(),
})
export type DelegationMetadata = z.infer<typeof delegationMetadataSchema>

export const waitOptionsSchema = z.strictObject({
  timeoutMs: z.number().int().min(0).max(Limits.waitTimeoutMsMax),
})

/** `Idempotency-Key`: a retry with the same key (in the same session) answers the first attempt. */
export const idempotencyKeySchema = z
  .string()
  .min(1)
  .max(128)
  .regex(/^[A-Za-z0-9._:-]+$/, 'letters, digits, ".", "_", ":" and "-" only')

export const delegationRequestSchema = z
  .strictObject({
    name: subagentNameSchema,
    prompt: promptSchema,
    agentId: uuidSchema.optional(),
    /** The run that makes this delegation (a run of the same session): its result comes back to it. */
    parentRunId: uuidSchema.optional(),
    /**
     * The attempt that makes this delegation (a child delegating its own children): an attempt of
     * the same session that has not finished. A cascade cancel of a run reaches these too.
     */
    parentAttemptId: uuidSchema.optional(),
    metadata: delegationMetadataSchema.optional(),
    wait: waitOptionsSchema.optional(),
  })
  .meta({
    examples: [
      { name: 'scripted', prompt: '{"output":"hello"}', wait: { timeoutMs: 5000 } },
      { name: 'researcher', prompt: 'Find where leases are renewed', metadata: { traceId: 't-1' } },
    ],
  })
export type DelegationRequest = z.infer<typeof delegationRequestSchema>

/**
 * One item of a batch submit: a delegation without `wait` (a batch answers once every item is
 * recorded, never after a wait), with its own optional idempotency key.
 */
export const batchItemSchema = z.strictObject({
  name: subagentNameSchema,
  prompt: promptSchema,
  agentId: uuidSchema.optional(),
  parentRunId: uuidSchema.optional(),
  parentAttemptId: uuidSchema.optional(),
  metadata: delegationMetadataSchema.optional(),
  idempotencyKey: idempotencyKeySchema.optional(),
})
export type BatchItem = z.infer<typeof batchItemSchema>

const acceptedFields = {
  agentId: z.uuid(),
  attemptId: z.uuid(),
  status: z.literal('accepted'),
}

/** The answer of an accepted delegation (`202`): its ids; wait on the attempt for the result. */
export const delegationAcceptedSchema = z.object(acceptedFields).meta({
  id: 'DelegationAccepted',
  examples: [
    {
      agentId: '0b9e8f3c-5d1a-4e7b-9c2f-6a8d4e1b3c5f',
      attemptId: '7c4a1e2b-3f5d-4a6b-8c9d-0e1f2a3b4c5d',
      status: 'accepted',
    },
  ],
})
export type DelegationAccepted = z.infer<typeof delegationAcceptedSchema>

/** A batch item's `202`: the accepted delegation, and whether its key's first attempt answered. */
export const batchItemAcceptedSchema = z.object({ ...acceptedFields, replayed: z.boolean() })

/**
 * The answer of a batch submit: one entry per item, in order — the item's `202`, or the status
 * and error body the single route would have given it.
 */
export const batchAnswerSchema = z
  .object({
    results: z.array(
      z.union([
        z.object({ status: z.literal(202), body: batchItemAcceptedSchema }),
        z.object({ status: z.number().int().min(400).max(599), body: errorBodySchema }),
      ]),
    ),
  })
  .meta({ id: 'BatchAnswer' })
export type BatchAnswer = z.infer<typeof batchAnswerSchema>

export const cancelRequestSchema = z.strictObject({
  reason: storableText().min(1).max(Limits.cancelReasonChars).optional(),
})

/** A steering message for a running (or queued) attempt: text or text blocks, like a prompt. */
export const steerRequestSchema = z.strictObject({ content: promptSchema })

/** The answer of a cancel: a queued attempt ended at once, or a running one was asked to stop. */
export const cancelAnswerSchema = z.object({
  attemptId: z.uuid(),
  outcome: z.enum(['cancelled_queued', 'cancel_requested']),
})
export type CancelAnswer = z.infer<typeof cancelAnswerSchema>

/** The answer of a steer: the message is recorded with this sequence (delivery: the view). */
export const steerAnswerSchema = z.object({
  attemptId: z.uuid(),
  sequence: z.number().int().min(1),
})
export type SteerAnswer = z.infer<typeof steerAnswerSchema>

/**
 * A number in a query string: plain decimal digits only. Number() would also take "", " 5",
 * "0x10" and "1e3", so a typo would silently become some other bound.
 */
function queryInteger(max: number) {
  return z
    .string()
    .regex(/^[0-9]{1,15}$/, 'a plain decimal integer')
    .transform(Number)
    .pipe(z.number().int().min(0).max(max))
}

export const waitQuerySchema = z.strictObject({
  timeoutMs: queryInteger(Limits.waitTimeoutMsMax).default(0),
})

/** Normalises either prompt form to text blocks, the form every child receives. */
export function promptToBlocks(prompt: Prompt): { type: 'text'; text: string }[] {
  return typeof prompt === 'string'
    ? [{ type: 'text', text: prompt }]
    : prompt.map((b) => ({ ...b }))
}
