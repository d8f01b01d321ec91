import { z } from 'zod'

/**
 * The job catalog. A job carries the attempt id (plus trace context when tracing is on) and its job
 * id IS the attempt id, so a second enqueue of the same attempt is a no-op; everything else is read
 * from the ledger.
 */
export const QueueName = {
  Attempts: 'attempts',
  /** Carries no jobs: its event stream carries commands from the API to workers. */
  WorkerCommands: 'worker-commands',
  /**
   * Carries no jobs: its event stream tells the API's bounded waits that an attempt settled
   * (`settled`), and its bounded claims that a session's continuation may be claimable
   * (`claimable`).
   */
  AttemptSettlements: 'attempt-settlements',
} as const
export type QueueName = (typeof QueueName)[keyof typeof QueueName]

/**
 * An attempt's job: its attempt id and, only when the enqueuing API traces, the W3C trace context
 * (https://www.w3.org/TR/trace-context/) the worker's spans continue, so one delegation is one
 * trace across processes. Nothing else: the ledger holds everything that decides an outcome.
 */
export const attemptJobSchema = z.strictObject({
  attemptId: z.uuid(),
  traceparent: z
    .string()
    .regex(/^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/)
    .optional(),
  // The specification's bound: a longer tracestate is dropped by the propagator anyway.
  tracestate: z
    .string()
    .max(512)
    .regex(/^[\x20-\x7e]*$/)
    .optional(),
})
export type AttemptJob = z.infer<typeof attemptJobSchema>
export const ATTEMPT_JOB_NAME = 'attempt'

/**
 * Commands to the worker that owns an attempt. The ledger is written first; a command only
 * shortens the time until the owner notices (heartbeats find it otherwise).
 */
export const workerCommandSchema = z.discriminatedUnion('eventName', [
  z.object({ eventName: z.literal('cancel'), attemptId: z.uuid() }),
  z.object({ eventName: z.literal('steer'), attemptId: z.uuid() }),
])
export type WorkerCommand = z.infer<typeof workerCommandSchema>
export type WorkerCommandName = WorkerCommand['eventName']
export const WORKER_COMMAND_NAMES: readonly WorkerCommandName[] = ['cancel', 'steer']

/**
 * What the committer of a terminal outcome may add to its settlement: the attempt's namespace and
 * its terminal view as committed, read in the commit's own statement. A wait that hears it answers
 * with it instead of reading the ledger back. The view stays unchecked here: only a waiter checks
 * it (against `terminalAttemptViewSchema`), so a settlement nobody waits for costs its listener
 * no more than parsing its JSON.
 */
export const settledDetailSchema = z.object({ namespaceId: z.string(), view: z.unknown() })
export type SettledDetail = z.infer<typeof settledDetailSchema>

/**
 * Told to the API once an attempt is terminal in the ledger, so bounded waits answer at once
 * instead of at their bound.
 */
export const attemptSettlementSchema = z.object({
  eventName: z.literal('settled'),
  attemptId: z.uuid(),
  detail: settledDetailSchema.optional(),
})
export type AttemptSettlement = z.infer<typeof attemptSettlementSchema>

/** The session a continuation belongs to: whose bounded claims a `claimable` event wakes. */
export const claimableDetailSchema = z.object({ namespaceId: z.string(), sessionId: z.string() })
export type ClaimableDetail = z.infer<typeof claimableDetailSchema>

/**
 * Told to the API when a continuation of a session may have become claimable: admitted with a
 * pending run, or released by reconciliation, or a result landed for a parent run of the session
 * (it may have been admitted in that statement). Wakes only that session's bounded claims; a
 * spurious ring costs those claims one statement each.
 */
export const continuationClaimableSchema = z.object({
  eventName: z.literal('claimable'),
  attemptId: z.uuid(),
  detail: claimableDetailSchema,
})
export type ContinuationClaimable = z.infer<typeof continuationClaimableSchema>

/** Everything the API hears on the `attempt-settlements` stream. */
export const apiBellSchema = z.discriminatedUnion('eventName', [
  attemptSettlementSchema,
  continuationClaimableSchema,
])
export type ApiBell = z.infer<typeof apiBellSchema>
