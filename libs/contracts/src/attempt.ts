import { z } from 'zod'
import { deliveryViewSchema } from './continuation.ts'
import { isoTimeSchema } from './delegation.ts'
import { failureCategorySchema } from './failure-category.ts'

/** The stop reasons of seed 003. Consumers treat an unknown reason as a failure. */
export const STOP_REASONS = ['completed', 'aborted', 'error', 'max-tokens', 'refusal'] as const
export const stopReasonSchema = z.enum(STOP_REASONS)
export type StopReason = z.infer<typeof stopReasonSchema>

export const ATTEMPT_STATUSES = ['accepted', 'running', 'terminal'] as const
export type AttemptStatus = (typeof ATTEMPT_STATUSES)[number]

/**
 * Which steering messages of an attempt reached its child. `accepted` is the highest sequence
 * recorded (every `202` of a steer counted); `delivered` the highest sequence handed to the child.
 * Delivery is in sequence order, so messages 1…delivered reached it and delivered…accepted did not
 * (yet, or ever: a message recorded as the child finishes is never delivered).
 */
export const steeringProgressSchema = z.object({
  accepted: z.number().int().min(0),
  delivered: z.number().int().min(0),
})
export type SteeringProgress = z.infer<typeof steeringProgressSchema>

/**
 * A stored output: `GET /v1/artifacts/:artifactId` serves its content until `expiresAt` (database
 * clock); afterwards the digest and size remain.
 */
export const artifactViewSchema = z
  .object({
    artifactId: z.uuid(),
    bytes: z.number().int().min(0),
    digest: z.string(),
    expiresAt: isoTimeSchema,
  })
  .meta({ id: 'ArtifactView' })
export type ArtifactView = z.infer<typeof artifactViewSchema>

/** What any reader sees of every attempt. */
const attemptFields = {
  attemptId: z.uuid(),
  agentId: z.uuid(),
  sessionId: z.string(),
  name: z.string(),
  createdAt: isoTimeSchema,
  startedAt: isoTimeSchema.nullable(),
  cancelRequested: z.boolean(),
  /**
   * Present when a cancel was requested with a reason: the caller's, or the cascade's that
   * cancelled it (`cascade: run <runId> was cancelled`).
   */
  cancelReason: z.string().optional(),
  steering: steeringProgressSchema,
}

/** An attempt that is not terminal yet: what a read, or a wait whose bound expired, answers. */
export const attemptSnapshotSchema = z
  .object({ ...attemptFields, status: z.enum(['accepted', 'running']) })
  .meta({ id: 'AttemptSnapshot' })
export type AttemptSnapshot = z.infer<typeof attemptSnapshotSchema>

/**
 * The fields every attempt view has. Its `status` admits `terminal` too, so code that only reads
 * these fields takes any view; the API answers {@link AttemptSnapshot} or {@link TerminalAttemptView}.
 */
export type AttemptView = Omit<AttemptSnapshot, 'status'> & { status: AttemptStatus }

/** A terminal attempt: its outcome, and where its complete output is. */
export const terminalAttemptViewSchema = z
  .object({
    ...attemptFields,
    status: z.literal('terminal'),
    stopReason: stopReasonSchema,
    /** The inline preview of the output; `outputTruncated` says whether it is the whole output. */
    output: z.string(),
    outputTruncated: z.boolean(),
    /** The size of the complete output in UTF-8 bytes. */
    outputBytes: z.number().int().min(0),
    /** `resultDigest` of the complete output (see the README for its definition). */
    digest: z.string(),
    /** Where the complete output can be loaded when the preview is not all of it. */
    artifact: artifactViewSchema.nullable(),
    /** One of the durable failure categories; null when the attempt completed. */
    failureCategory: failureCategorySchema.nullable(),
    terminalAt: isoTimeSchema,
    /** The events this attempt appended to its agent's history, or null when it appended none. */
    context: z
      .object({ baseSeq: z.number().int().min(0), eventCount: z.number().int().min(0) })
      .nullable(),
    /** Present when the delegation named a parent run: how the result is handed back to it. */
    delivery: deliveryViewSchema.optional(),
  })
  .meta({ id: 'TerminalAttemptView' })
export type TerminalAttemptView = z.infer<typeof terminalAttemptViewSchema>

/** Any attempt view: the terminal view, or the snapshot of one still on its way. */
export const attemptViewSchema = z.union([terminalAttemptViewSchema, attemptSnapshotSchema])

export type AnyAttemptView = AttemptView | TerminalAttemptView

export function isTerminalView(view: AnyAttemptView): view is TerminalAttemptView {
  return view.status === 'terminal'
}

/** One event of an agent's durable history, with the attempt whose terminal commit appended it. */
export const historyEventViewSchema = z.object({
  seq: z.number().int().min(0),
  attemptId: z.uuid(),
  event: z.unknown(),
})
export type HistoryEventView = z.infer<typeof historyEventViewSchema>

/**
 * An agent's durable history: the events its attempts contributed, in order. An attempt's events
 * appear only once its terminal commit succeeded; a continuation resumes from exactly this.
 */
export const agentHistoryViewSchema = z
  .object({
    agentId: z.uuid(),
    sessionId: z.string(),
    name: z.string(),
    events: z.array(historyEventViewSchema),
  })
  .meta({ id: 'AgentHistoryView' })
export type AgentHistoryView = z.infer<typeof agentHistoryViewSchema>
