import { z } from 'zod'

/**
 * The job catalog. A job carries only the attempt id and its job id IS the attempt id, so a second
 * enqueue of the same attempt is a no-op; everything else is read from the ledger.
 */
export const QueueName = {
  Attempts: 'attempts',
  /** Carries no jobs: its event stream is the control and completion doorbell. */
  Control: 'control',
} as const
export type QueueName = (typeof QueueName)[keyof typeof QueueName]

export const attemptJobSchema = z.strictObject({ attemptId: z.uuid() })
export type AttemptJob = z.infer<typeof attemptJobSchema>
export const ATTEMPT_JOB_NAME = 'attempt'

/** Events published on the control stream. The ledger is written first; these only ring bells. */
export const controlEventSchema = z.discriminatedUnion('eventName', [
  z.object({ eventName: z.literal('cancel'), attemptId: z.uuid() }),
  z.object({ eventName: z.literal('terminal'), attemptId: z.uuid() }),
  z.object({ eventName: z.literal('steer'), attemptId: z.uuid() }),
])
export type ControlEvent = z.infer<typeof controlEventSchema>
export type ControlEventName = ControlEvent['eventName']

export const CONTROL_EVENT_NAMES: readonly ControlEventName[] = ['cancel', 'terminal', 'steer']
