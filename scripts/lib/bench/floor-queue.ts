// The queue floor: the part of a delegation's work that any design on HTTP and BullMQ pays, with
// one job per delegation. Its route validates the same body as the hand-rolled service, enqueues
// through Baton's own group batcher (one `addBulk` in flight, as Baton's API enqueues) with the
// delegation's id as job id (as Baton and the hand-rolled service do), and a waiting call answers
// from the queue's `completed` event, listened for before the add; its worker runs the same no-op
// child. No database, no lease, no audit: Baton does all of this and more for every
// delegation, so its CPU per delegation cannot fall below the floor's, nor its throughput pass it.
//
// It also has Baton's cancel path without the ledger: a child told to hang (`{"hang":true}`, as the
// scripted child reads it) runs until cancelled; the cancel route publishes a `cancel` bell on a
// stream of its own (as Baton's API rings `worker-commands`), every worker hears it and the one
// holding the job aborts it, and a pending wait answers from the queue's `failed` event. So the
// bench can measure cancel → aborted on the same machine with nothing but HTTP and BullMQ.

export const FLOOR_QUEUE = 'floor'
/** The stream that carries the floor's cancel bells (a queue with no jobs, as Baton's). */
export const FLOOR_COMMANDS = 'floor-commands'
/** The failure reason of a job whose child was cancelled. */
export const FLOOR_ABORTED = 'aborted'
export const FLOOR_API_READY_MESSAGE = 'floor api listening'
export const FLOOR_WORKER_READY_MESSAGE = 'floor worker started'

/**
 * Entries the floor's event stream keeps (BullMQ trims to 10,000 by default): the bench reads the
 * phase's throughput from the stream's own timestamps, so no event of the phase may be trimmed.
 */
export const FLOOR_EVENTS_KEPT = 1_000_000

/** The job: the prompt, so the worker needs no read before it runs. */
export interface FloorJob {
  readonly prompt: unknown
}

/** Whether the child is told to hang until it is cancelled (the scripted child's `hang`). */
export function hangs(prompt: unknown): boolean {
  if (typeof prompt !== 'string') return false
  try {
    return (JSON.parse(prompt) as { hang?: unknown }).hang === true
  } catch {
    return false
  }
}
