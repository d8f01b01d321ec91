import { SpanKind, type Tracing } from '@baton/observability'
import type { Admission } from './admission.ts'

/** Span names of the API's share of a delegation (see the README's Traces section). */
export const ACCEPT_SPAN = 'baton.accept'
export const ENQUEUE_SPAN = 'baton.enqueue'

/**
 * Admission with a span per delegation for its share of the batched ledger statement
 * (`baton.accept`) and of the batched `addBulk` (`baton.enqueue`), children of the request span.
 * The enqueue span's context rides in the job data, so the worker's spans continue this trace.
 * A batch submit gets one of each, and every job of the batch carries the same context. With
 * tracing off the admission is returned as it is: no span, no trace context in any job.
 */
export function traceAdmission(admission: Admission, tracing: Tracing): Admission {
  if (!tracing.enabled) return admission
  return {
    accept: (input) =>
      tracing.inSpan(
        ACCEPT_SPAN,
        { attributes: { 'baton.attempt_id': input.attemptId, 'baton.subagent': input.name } },
        async (span) => {
          const outcome = await admission.accept(input)
          span.setAttribute('baton.outcome', outcome.kind)
          return outcome
        },
      ),
    acceptAll: (inputs) =>
      tracing.inSpan(ACCEPT_SPAN, { attributes: { 'baton.items': inputs.length } }, () =>
        admission.acceptAll(inputs),
      ),
    enqueue: (attempt) =>
      tracing.inSpan(
        ENQUEUE_SPAN,
        { kind: SpanKind.PRODUCER, attributes: { 'baton.attempt_id': attempt.attemptId } },
        () => admission.enqueue(attempt, tracing.carrier()),
      ),
    enqueueAll: (attempts) =>
      tracing.inSpan(
        ENQUEUE_SPAN,
        { kind: SpanKind.PRODUCER, attributes: { 'baton.items': attempts.length } },
        () => admission.enqueueAll(attempts, tracing.carrier()),
      ),
  }
}
