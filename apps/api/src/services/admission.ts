import type { ApiMetrics, Logger, TraceCarrier } from '@baton/observability'
import {
  enqueueRouted,
  type AttemptQueues,
  type AttemptRoute,
  type RoutedAttemptJob,
} from '@baton/queue'
import {
  acceptDelegations,
  createGroupBatcher,
  isolateUnexpected,
  type AcceptDelegationInput,
  type AcceptDelegationOutcome,
  type Db,
} from '@baton/store'
import { countAccepted } from './service-metrics.ts'

export interface Admission {
  /** Records a delegation in the ledger (batched with concurrent ones, whatever their kind). */
  accept(input: AcceptDelegationInput): Promise<AcceptDelegationOutcome>
  /**
   * Enqueues an accepted attempt (batched with concurrent ones). Never rejects: see below. `trace`
   * (only when tracing is on) rides in the job data.
   */
  enqueue(attempt: AttemptRoute, trace?: TraceCarrier): Promise<void>
  /** Records a batch submit's delegations in one ledger statement, answered per item. */
  acceptAll(inputs: readonly AcceptDelegationInput[]): Promise<AcceptDelegationOutcome[]>
  /** Enqueues a batch submit's accepted attempts in one `addBulk`. Never rejects, like `enqueue`. */
  enqueueAll(attempts: readonly AttemptRoute[], trace?: TraceCarrier): Promise<void>
}

const MAX_BATCH = 256

/**
 * The hot path of the API, batched: concurrent accepts (new or continued, keyed or not) share one
 * ledger statement and concurrent enqueues share one Redis round trip per queue partition
 * (`addBulk`; job id = attempt id, so a re-add is a no-op). An enqueue that fails is logged and left to the reconciler: the
 * accept is already durable.
 */
export function createAdmission(deps: {
  db: Db
  queues: AttemptQueues
  logger: Logger
  maxInFlight: number
  metrics?: ApiMetrics
}): Admission {
  const acceptBatch = async (inputs: readonly AcceptDelegationInput[]) => {
    const outcomes = await acceptDelegations(deps.db, inputs)
    countAccepted(deps.metrics, outcomes)
    return outcomes
  }
  const accepts = createGroupBatcher<AcceptDelegationInput, AcceptDelegationOutcome>(
    acceptBatch,
    // One request's value the ledger refuses must not fail the requests batched with it.
    {
      maxBatch: MAX_BATCH,
      maxInFlight: deps.maxInFlight,
      isolate: isolateUnexpected,
    },
  )
  const enqueues = createGroupBatcher<RoutedAttemptJob, void>(
    async (attempts) => {
      await enqueueRouted(deps.queues, attempts)
      return attempts.map(() => undefined)
    },
    { maxBatch: MAX_BATCH, maxInFlight: 1 },
  )
  return {
    accept: (input) => accepts.submit(input),
    acceptAll: acceptBatch,
    async enqueueAll(attempts, trace) {
      try {
        await enqueueRouted(
          deps.queues,
          trace === undefined ? attempts : attempts.map((attempt) => ({ ...attempt, ...trace })),
        )
      } catch (error) {
        deps.logger.warn(
          { err: error, attempts: attempts.length },
          'enqueue failed after accept; the reconciler will enqueue them',
        )
      }
    },
    async enqueue(attempt, trace) {
      try {
        await enqueues.submit(trace === undefined ? attempt : { ...attempt, ...trace })
      } catch (error) {
        deps.logger.warn(
          { err: error, attemptId: attempt.attemptId },
          'enqueue failed after accept; the reconciler will enqueue it',
        )
      }
    },
  }
}
