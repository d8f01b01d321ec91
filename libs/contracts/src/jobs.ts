import { z } from 'zod'

/**
 * The job catalog. A job carries only the attempt id and its job id IS the attempt id, so a second
 * enqueue of the same attempt is a no-op; everything else is read from the ledger.
 */
export const QueueName = {
  Attempts: 'attempts',
  /** Carries no jobs: its event stream carries commands from the API to workers. */
  WorkerCommands: 'worker-commands',
  /** Carries no jobs: its event stream tells the API's bounded waits that an attempt settled. */
  AttemptSettlements: 'attempt-settlements',
} as const
export type QueueName = (typeof QueueName)[keyof typeof QueueName]

export const attemptJobSchema = z.strictObject({ attemptId: z.uuid() })
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
 * Told to the API once an attempt is terminal in the ledger, so bounded waits read it at once
 * instead of at their bound.
 */
export const attemptSettlementSchema = z.object({
  eventName: z.literal('settled'),
  attemptId: z.uuid(),
})
export type AttemptSettlement = z.infer<typeof attemptSettlementSchema>
