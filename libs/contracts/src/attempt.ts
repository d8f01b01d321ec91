import { z } from 'zod'
import type { DeliveryView } from './continuation.ts'
import type { FailureCategory } from './failure-category.ts'

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
export interface SteeringProgress {
  readonly accepted: number
  readonly delivered: number
}

/** What any reader sees of an attempt. Terminal fields are present only when `status` is terminal. */
export interface AttemptView {
  readonly attemptId: string
  readonly agentId: string
  readonly sessionId: string
  readonly name: string
  readonly status: AttemptStatus
  readonly createdAt: string
  readonly startedAt: string | null
  readonly cancelRequested: boolean
  readonly steering: SteeringProgress
}

export interface TerminalAttemptView extends AttemptView {
  readonly status: 'terminal'
  readonly stopReason: StopReason
  /** The inline preview of the output; `outputTruncated` says whether it is the whole output. */
  readonly output: string
  readonly outputTruncated: boolean
  /** The size of the complete output in UTF-8 bytes. */
  readonly outputBytes: number
  /** `resultDigest` of the complete output (see the README for its definition). */
  readonly digest: string
  /** Where the complete output can be loaded when the preview is not all of it. */
  readonly artifact: ArtifactView | null
  /** One of the durable {@link FailureCategory} values; null when the attempt completed. */
  readonly failureCategory: FailureCategory | null
  readonly terminalAt: string
  /** The events this attempt appended to its agent's history, or null when it appended none. */
  readonly context: { readonly baseSeq: number; readonly eventCount: number } | null
  /** Present when the delegation named a parent run: how the result is handed back to it. */
  readonly delivery?: DeliveryView
}

/**
 * A stored output: `GET /v1/artifacts/:artifactId` serves its content until `expiresAt` (database
 * clock); afterwards the digest and size remain.
 */
export interface ArtifactView {
  readonly artifactId: string
  readonly bytes: number
  readonly digest: string
  readonly expiresAt: string
}

export type AnyAttemptView = AttemptView | TerminalAttemptView

export function isTerminalView(view: AnyAttemptView): view is TerminalAttemptView {
  return view.status === 'terminal'
}

/** One event of an agent's durable history, with the attempt whose terminal commit appended it. */
export interface HistoryEventView {
  readonly seq: number
  readonly attemptId: string
  readonly event: unknown
}

/**
 * An agent's durable history: the events its attempts contributed, in order. An attempt's events
 * appear only once its terminal commit succeeded; a continuation resumes from exactly this.
 */
export interface AgentHistoryView {
  readonly agentId: string
  readonly sessionId: string
  readonly name: string
  readonly events: readonly HistoryEventView[]
}
