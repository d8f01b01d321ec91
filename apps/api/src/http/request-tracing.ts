import type { FastifyInstance, FastifyRequest } from 'fastify'
import { SpanKind, SpanStatusCode, type Span, type Tracing } from '@baton/observability'

/**
 * A server span per HTTP request, named `<METHOD> <route>` (`POST
 * /v1/sessions/:sessionId/delegations`). It continues a caller's W3C `traceparent` header when
 * one is sent, and is active from the handler on, so the spans of a delegation's accept and
 * enqueue are its children and the job carries its trace to the worker. Installed only when
 * tracing is on, before the routes.
 */
export function installRequestTracing(app: FastifyInstance, tracing: Tracing): void {
  const spans = new WeakMap<FastifyRequest, Span>()

  app.addHook('onRequest', (request, _reply, done) => {
    const route = request.routeOptions.url ?? 'unmatched'
    spans.set(
      request,
      tracing.startSpan(`${request.method} ${route}`, {
        kind: SpanKind.SERVER,
        remoteParent: request.headers,
        attributes: { 'http.request.method': request.method, 'http.route': route },
      }),
    )
    done()
  })

  // The body is parsed by then (its stream events run outside any span), so the handler and the
  // hooks after this one run inside the span.
  app.addHook('preHandler', (request, _reply, done) => {
    const span = spans.get(request)
    if (span === undefined) done()
    else tracing.withSpan(span, done)
  })

  // Ends the span once: the answer is sent, or the caller went away before it.
  const end = (request: FastifyRequest, statusCode: number | undefined): void => {
    const span = spans.get(request)
    if (span === undefined) return
    spans.delete(request)
    if (statusCode === undefined) span.setAttribute('baton.request_aborted', true)
    else span.setAttribute('http.response.status_code', statusCode)
    // Server spans are errors for 5xx only: a 4xx is the caller's, answered as designed.
    if (statusCode !== undefined && statusCode >= 500)
      span.setStatus({ code: SpanStatusCode.ERROR })
    span.end()
  }
  app.addHook('onResponse', (request, reply, done) => {
    end(request, reply.statusCode)
    done()
  })
  app.addHook('onRequestAbort', (request, done) => {
    end(request, undefined)
    done()
  })
}
