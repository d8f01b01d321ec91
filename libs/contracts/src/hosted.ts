import { z } from 'zod'
import { createRunRequestSchema, runViewSchema } from './continuation.ts'
import { Limits, delegationMetadataSchema, isoTimeSchema, promptSchema } from './delegation.ts'
import { storableText } from './storable-text.ts'

/**
 * Hosted parents: sessions created with a profile, whose parent runs Baton's fleet executes.
 */

/** `POST /v1/sessions`: a hosted session on a profile of the deployment's profiles file. */
export const createSessionRequestSchema = z.strictObject({
  profile: storableText().min(1).max(128),
  metadata: delegationMetadataSchema.optional(),
})
export type CreateSessionRequest = z.infer<typeof createSessionRequestSchema>

export const sessionViewSchema = z
  .object({
    sessionId: z.string(),
    /** Null for a host-managed session (created implicitly by a delegation or a host run). */
    profile: z.string().nullable(),
    metadata: delegationMetadataSchema.nullable(),
    createdAt: isoTimeSchema,
    /** When its deletion fence was set; null while it admits work. */
    deletedAt: isoTimeSchema.nullable(),
  })
  .meta({ id: 'SessionView' })
export type SessionView = z.infer<typeof sessionViewSchema>

/**
 * `POST /v1/sessions/:sessionId/runs`. On a hosted session: `input` (required), and optionally
 * one bounded wait of `wait` milliseconds for the run's end. On a host-managed session:
 * `consume` and `leaseMs` (`createRunRequestSchema`).
 */
export const runRequestSchema = createRunRequestSchema
  .extend({
    input: promptSchema.optional(),
    wait: z.number().int().min(0).max(Limits.waitTimeoutMsMax).optional(),
  })
  .meta({ id: 'RunRequest' })
export type RunRequest = z.infer<typeof runRequestSchema>

/** A hosted run: the run, and once it ended, the parent's answer (its output's preview). */
export const hostedRunViewSchema = runViewSchema
  .extend({
    hosted: z.boolean(),
    /** The parent's final text for a completed hosted run; null otherwise. */
    output: z.string().nullable(),
  })
  .meta({ id: 'HostedRunView' })
export type HostedRunView = z.infer<typeof hostedRunViewSchema>

/** The kinds of a hosted session's events (see docs/hosted.md). */
export const SESSION_EVENT_KINDS = [
  'record',
  'subagent_started',
  'subagent_completed',
  'subagent_failed',
  'run_queued',
  'run_started',
  'run_ended',
] as const

/** One event of a session's stream, as each SSE frame's `data` carries it. */
export interface SessionEvent {
  readonly seq: number
  readonly kind: (typeof SESSION_EVENT_KINDS)[number]
  readonly runId: string | null
  /** A child's record: the child agent id, name, task id, attempt id, parent run id, its seq. */
  readonly source: Readonly<Record<string, unknown>> | null
  readonly payload: unknown
  readonly at: string
}
