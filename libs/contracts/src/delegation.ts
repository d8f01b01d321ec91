import { z } from 'zod'
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

export const delegationRequestSchema = z.strictObject({
  name: subagentNameSchema,
  prompt: promptSchema,
  agentId: uuidSchema.optional(),
  /** The run that makes this delegation (a run of the same session): its result comes back to it. */
  parentRunId: uuidSchema.optional(),
  metadata: delegationMetadataSchema.optional(),
  wait: waitOptionsSchema.optional(),
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
  metadata: delegationMetadataSchema.optional(),
  idempotencyKey: idempotencyKeySchema.optional(),
})
export type BatchItem = z.infer<typeof batchItemSchema>

export const delegationAcceptedSchema = z.object({
  agentId: z.uuid(),
  attemptId: z.uuid(),
  status: z.literal('accepted'),
})
export type DelegationAccepted = z.infer<typeof delegationAcceptedSchema>

export const cancelRequestSchema = z.strictObject({
  reason: storableText().min(1).max(Limits.cancelReasonChars).optional(),
})

/** A steering message for a running (or queued) attempt: text or text blocks, like a prompt. */
export const steerRequestSchema = z.strictObject({ content: promptSchema })

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
