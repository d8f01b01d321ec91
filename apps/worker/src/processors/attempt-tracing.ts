import type { Job } from 'bullmq'
import { QueueName, type AttemptJob } from '@baton/contracts'
import { SpanKind, type Tracing } from '@baton/observability'
import type {
  ClaimAttemptOutcome,
  ClaimedAttempt,
  CommitTerminalInput,
  CommittedTerminal,
  TerminalResultInput,
} from '@baton/store'
import { NOT_STARTED } from './run-child.ts'

/** Span names of the worker's share of a delegation (see the README's Traces section). */
export const ATTEMPT_SPAN = 'baton.attempt'
export const CLAIM_SPAN = 'baton.claim'
export const RUN_SPAN = 'baton.run'
export const COMMIT_SPAN = 'baton.commit'

type AttemptJobProcessor = (
  job: Job<AttemptJob>,
  token?: string,
  signal?: AbortSignal,
) => Promise<void>

/**
 * The processor inside one consumer span per delivery (`baton.attempt`), continuing the trace
 * context the API put in the job data; a job without one (tracing was off at the API, or the
 * reconciler re-enqueued it) starts a trace of its own. Everything the processor does runs inside
 * it: the claim, run and commit spans are its children, and its log lines carry its ids.
 */
export function traceAttemptJobs(
  tracing: Tracing,
  processor: AttemptJobProcessor,
): AttemptJobProcessor {
  if (!tracing.enabled) return processor
  return (job, token, signal) => {
    // Not yet validated (the processor does that): only its two W3C strings are read, and a
    // malformed value starts a new trace.
    const data: unknown = job.data
    const carrier =
      typeof data === 'object' && data !== null ? (data as Record<string, unknown>) : {}
    return tracing.inSpan(
      ATTEMPT_SPAN,
      {
        kind: SpanKind.CONSUMER,
        remoteParent: carrier,
        attributes: {
          'messaging.system': 'bullmq',
          'messaging.destination.name': QueueName.Attempts,
          'messaging.message.id': job.id ?? '',
          'baton.attempt_id': job.id ?? '',
          'baton.delivery': job.attemptsMade + 1,
        },
      },
      () => processor(job, token, signal),
    )
  }
}

export interface LedgerCalls {
  readonly claim: (attemptId: string) => Promise<ClaimAttemptOutcome>
  readonly commit: (input: CommitTerminalInput) => Promise<CommittedTerminal>
}

/**
 * Claims and commits with a span per attempt for its wait on the batched statement it shares
 * (`baton.claim`, `baton.commit`), so each delegation's trace shows its own share even though one
 * statement serves many attempts. A retried commit gets a span per try.
 */
export function traceLedgerCalls(tracing: Tracing, calls: LedgerCalls): LedgerCalls {
  if (!tracing.enabled) return calls
  return {
    claim: (attemptId) =>
      tracing.inSpan(
        CLAIM_SPAN,
        { attributes: { 'baton.attempt_id': attemptId } },
        async (span) => {
          const outcome = await calls.claim(attemptId)
          span.setAttribute('baton.outcome', outcome.kind)
          if (outcome.kind === 'claimed')
            span.setAttribute('baton.owner_generation', outcome.attempt.ownerGeneration)
          return outcome
        },
      ),
    commit: (input) =>
      tracing.inSpan(
        COMMIT_SPAN,
        {
          attributes: {
            'baton.attempt_id': input.attemptId,
            'baton.owner_generation': input.ownerGeneration,
            'baton.stop_reason': input.result.stopReason,
            // The delegation's own `metadata.traceId` (a caller's label, bound by the fingerprint).
            ...(input.traceId === undefined ? {} : { 'baton.metadata.trace_id': input.traceId }),
          },
        },
        async (span) => {
          const answer = await calls.commit(input)
          span.setAttribute('baton.outcome', answer.outcome)
          return answer
        },
      ),
  }
}

/** The child's run (`baton.run`): from its start to its terminal result. */
export function traceRun(
  tracing: Tracing,
  attempt: ClaimedAttempt,
  run: () => Promise<TerminalResultInput | typeof NOT_STARTED>,
): Promise<TerminalResultInput | typeof NOT_STARTED> {
  if (!tracing.enabled) return run()
  return tracing.inSpan(
    RUN_SPAN,
    { attributes: { 'baton.attempt_id': attempt.attemptId, 'baton.subagent': attempt.name } },
    async (span) => {
      const result = await run()
      if (result === NOT_STARTED) return result
      span.setAttribute('baton.stop_reason', result.stopReason)
      if (result.failureCategory !== null && result.failureCategory !== undefined)
        span.setAttribute('baton.failure_category', result.failureCategory)
      return result
    },
  )
}
