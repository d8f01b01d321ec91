import {
  INVALID_SPAN_CONTEXT,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  context,
  defaultTextMapGetter,
  defaultTextMapSetter,
  diag,
  trace,
  DiagLogLevel,
  type Attributes,
  type Context,
  type Span,
} from '@opentelemetry/api'
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks'
import { W3CTraceContextPropagator } from '@opentelemetry/core'
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http'
import { resourceFromAttributes } from '@opentelemetry/resources'
import {
  AlwaysOnSampler,
  BatchSpanProcessor,
  ParentBasedSampler,
  TracerProvider,
  type SpanProcessor,
} from '@opentelemetry/sdk-trace'
import type { Logger } from './logger.ts'
import type { TracingConfig } from './tracing-config.ts'

export { SpanKind, SpanStatusCode, type Span }

/** W3C trace context as job data carries it (`traceparent`, and `tracestate` when there is one). */
export interface TraceCarrier {
  readonly traceparent: string
  readonly tracestate?: string
}

export interface TraceSpanOptions {
  readonly kind?: SpanKind
  readonly attributes?: Attributes
  /**
   * Continue the trace this carrier names (job data, request headers) instead of the active span's.
   * A carrier without a valid `traceparent` starts a new trace.
   */
  readonly remoteParent?: Readonly<Record<string, unknown>>
}

/**
 * One process's tracing. Off (no OTLP endpoint, no test processor) it costs nothing: spans are the
 * OpenTelemetry API's no-op, `carrier()` is `undefined`, and callers install no hooks.
 */
export interface Tracing {
  readonly enabled: boolean
  /**
   * Runs `fn` inside a new span (a child of the active span, or of `remoteParent`), active for
   * everything `fn` starts; ended when `fn` settles, with an error status if it throws.
   */
  inSpan<T>(name: string, options: TraceSpanOptions, fn: (span: Span) => Promise<T>): Promise<T>
  /** Starts a span the caller ends: for hook pairs that open and close around a request. */
  startSpan(name: string, options: TraceSpanOptions): Span
  /** Runs `fn` with `span` active: spans it starts are children, its log lines carry the ids. */
  withSpan<T>(span: Span, fn: () => T): T
  /** The active span's trace context, for a job's data; `undefined` when off or none is active. */
  carrier(): TraceCarrier | undefined
  /** Exports what is pending (bounded by the exporter's timeout), then drops later spans. */
  shutdown(): Promise<void>
}

export interface CreateTracingOptions {
  /** `service.name` unless the config names one (`OTEL_SERVICE_NAME`). */
  readonly service: string
  readonly config: TracingConfig
  /** Told when an export fails (a collector that is down): warnings, never thrown. */
  readonly logger?: Logger
  /**
   * Replaces the OTLP exporter (tests: `SimpleSpanProcessor` over an `InMemorySpanExporter`);
   * tracing is on when any is given.
   */
  readonly spanProcessors?: readonly SpanProcessor[]
}

const NOOP_SPAN: Span = trace.wrapSpanContext(INVALID_SPAN_CONTEXT)

/** Tracing that is off: what every process has unless OTLP (or a test processor) is configured. */
export const DISABLED_TRACING: Tracing = Object.freeze({
  enabled: false,
  inSpan: <T>(_name: string, _options: TraceSpanOptions, fn: (span: Span) => Promise<T>) =>
    fn(NOOP_SPAN),
  startSpan: () => NOOP_SPAN,
  withSpan: <T>(_span: Span, fn: () => T) => fn(),
  carrier: () => undefined,
  shutdown: () => Promise.resolve(),
})

const propagator = new W3CTraceContextPropagator()

/**
 * Builds a process's tracing from its config: a tracer provider of its own (not the global one,
 * so an API and a worker sharing a test process keep their service names) with a batch span
 * processor and the OTLP/HTTP JSON exporter, parent-based always-on sampling, and the W3C trace
 * context propagator for job data and request headers.
 */
export function createTracing(options: CreateTracingOptions): Tracing {
  const { otlp, serviceName } = options.config
  const processors =
    options.spanProcessors ??
    (otlp === undefined
      ? []
      : [
          new BatchSpanProcessor({
            exporter: new OTLPTraceExporter({ url: otlp.url, headers: { ...otlp.headers } }),
          }),
        ])
  if (processors.length === 0) return DISABLED_TRACING
  useAsyncContext()
  if (options.logger !== undefined) reportExportFailures(options.logger)
  const provider = new TracerProvider({
    resource: resourceFromAttributes({ 'service.name': serviceName ?? options.service }),
    spanProcessors: [...processors],
    sampler: new ParentBasedSampler({ root: new AlwaysOnSampler() }),
  })
  const tracer = provider.getTracer('baton')

  function startSpan(name: string, spanOptions: TraceSpanOptions, parent = parentOf(spanOptions)) {
    return tracer.startSpan(
      name,
      {
        kind: spanOptions.kind ?? SpanKind.INTERNAL,
        ...(spanOptions.attributes === undefined ? {} : { attributes: spanOptions.attributes }),
      },
      parent,
    )
  }

  return {
    enabled: true,
    async inSpan(name, spanOptions, fn) {
      const parent = parentOf(spanOptions)
      const span = startSpan(name, spanOptions, parent)
      try {
        return await context.with(trace.setSpan(parent, span), fn, undefined, span)
      } catch (error) {
        // The error's class only: messages may carry what a caller sent.
        span.setStatus({ code: SpanStatusCode.ERROR, message: errorName(error) })
        throw error
      } finally {
        span.end()
      }
    },
    startSpan: (name, spanOptions) => startSpan(name, spanOptions),
    withSpan: (span, fn) => context.with(trace.setSpan(context.active(), span), fn),
    carrier() {
      const fields: { traceparent?: string; tracestate?: string } = {}
      propagator.inject(context.active(), fields, defaultTextMapSetter)
      return fields.traceparent === undefined ? undefined : (fields as TraceCarrier)
    },
    shutdown: () => shutdownWithin(provider, SHUTDOWN_EXPORT_MS),
  }
}

/**
 * How long a stopping process waits for its last spans to be exported. A collector that is down
 * must not hold a shutdown past its deadline: those spans are dropped.
 */
const SHUTDOWN_EXPORT_MS = 3_000

async function shutdownWithin(provider: TracerProvider, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined
  const bound = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, ms)
    timer.unref()
  })
  try {
    await Promise.race([provider.shutdown().catch(() => undefined), bound])
  } finally {
    clearTimeout(timer)
  }
}

function parentOf(options: TraceSpanOptions): Context {
  return options.remoteParent === undefined
    ? context.active()
    : propagator.extract(ROOT_CONTEXT, options.remoteParent, defaultTextMapGetter)
}

function errorName(error: unknown): string {
  return error instanceof Error ? error.name : typeof error
}

let asyncContext = false

/**
 * Active spans follow async work through AsyncLocalStorage. Registered once per process, and only
 * by tracing that is on: with tracing off the API's no-op context manager stays in place.
 */
function useAsyncContext(): void {
  if (asyncContext) return
  const manager = new AsyncLocalStorageContextManager().enable()
  if (!context.setGlobalContextManager(manager)) manager.disable()
  asyncContext = true
}

/** The SDK reports failed exports through its diagnostic logger: route its warnings to pino. */
function reportExportFailures(logger: Logger): void {
  const log = logger.child({ component: 'tracing' })
  const warn = (message: string) => log.warn({ detail: message }, 'tracing export problem')
  diag.setLogger(
    { error: warn, warn, info: () => undefined, debug: () => undefined, verbose: () => undefined },
    { logLevel: DiagLogLevel.WARN, suppressOverrideMessage: true },
  )
}
