import { context, trace } from '@opentelemetry/api'

/**
 * The fields that tie a log line to its trace: `trace_id` and `span_id` of the active span. Run
 * for each line pino writes (after its level check). With tracing off no context manager is
 * registered, so this is one lookup in the API's root context that finds no span.
 */
export function traceFields(): { trace_id?: string; span_id?: string } {
  const span = trace.getSpan(context.active())
  if (span === undefined) return {}
  const { traceId, spanId } = span.spanContext()
  return { trace_id: traceId, span_id: spanId }
}
