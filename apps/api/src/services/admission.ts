import type { Logger } from '@baton/observability'
import type { AttemptQueue } from '@baton/queue'
import {
  acceptNewDelegations,
  acceptNewIdempotent,
  createGroupBatcher,
  type Db,
  type IdempotentAcceptOutcome,
  type IdempotentNewInput,
  type NewDelegationInput,
} from '@baton/store'
import { ATTEMPT_JOB_NAME } from '@baton/contracts'

export interface Admission {
  /** Records a new delegation in the ledger (batched with concurrent ones). */
  acceptNew(input: NewDelegationInput): Promise<void>
  /** Records a new delegation under an idempotency key (batched with concurrent ones). */
  acceptNewIdempotent(input: IdempotentNewInput): Promise<IdempotentAcceptOutcome>
  /** Enqueues an accepted attempt (batched with concurrent ones). Never rejects: see below. */
  enqueue(attemptId: string): Promise<void>
}

const MAX_BATCH = 256

/**
 * The hot path of the API, batched: concurrent accepts (keyed or not) share one ledger statement and concurrent
 * enqueues share one Redis round trip (`addBulk`; job id = attempt id, so a re-add is a no-op).
 * An enqueue that fails is logged and left to the reconciler: the accept is already durable.
 */
export function createAdmission(deps: {
  db: Db
  queue: AttemptQueue
  logger: Logger
  maxInFlight: number
}): Admission {
  const accepts = createGroupBatcher<NewDelegationInput, void>(
    async (inputs) => {
      await acceptNewDelegations(deps.db, inputs)
      return inputs.map(() => undefined)
    },
    { maxBatch: MAX_BATCH, maxInFlight: deps.maxInFlight },
  )
  const keyedAccepts = createGroupBatcher<IdempotentNewInput, IdempotentAcceptOutcome>(
    (inputs) => acceptNewIdempotent(deps.db, inputs),
    { maxBatch: MAX_BATCH, maxInFlight: deps.maxInFlight },
  )
  const enqueues = createGroupBatcher<string, void>(
    async (attemptIds) => {
      await deps.queue.addBulk(
        attemptIds.map((attemptId) => ({
          name: ATTEMPT_JOB_NAME,
          data: { attemptId },
          opts: { jobId: attemptId },
        })),
      )
      return attemptIds.map(() => undefined)
    },
    { maxBatch: MAX_BATCH, maxInFlight: 2 },
  )
  return {
    acceptNew: (input) => accepts.submit(input),
    acceptNewIdempotent: (input) => keyedAccepts.submit(input),
    async enqueue(attemptId) {
      try {
        await enqueues.submit(attemptId)
      } catch (error) {
        deps.logger.warn(
          { err: error, attemptId },
          'enqueue failed after accept; the reconciler will enqueue it',
        )
      }
    },
  }
}
