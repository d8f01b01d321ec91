export { createLogger } from './logger.ts'
export type { CreateLoggerOptions, Logger } from './logger.ts'
export { API_READY_MESSAGE, WORKER_READY_MESSAGE } from './ready-messages.ts'
export { NO_FAILURE_CATEGORY, SECONDS_BUCKETS, createMetricsRegistry } from './metrics-registry.ts'
export type { Registry, TerminalLabel } from './metrics-registry.ts'
export type { ScrapeSourceName, ScrapeSources } from './scrape-gauges.ts'
export { createApiMetrics } from './api-metrics.ts'
export type { ApiMetrics } from './api-metrics.ts'
export { createWorkerMetrics } from './worker-metrics.ts'
export type { WorkerMetrics } from './worker-metrics.ts'
export { METRICS_PATH, startMetricsServer } from './metrics-server.ts'
export type { MetricsServer } from './metrics-server.ts'
export { DISABLED_TRACING, SpanKind, SpanStatusCode, createTracing } from './tracing.ts'
export type {
  CreateTracingOptions,
  Span,
  TraceCarrier,
  TraceSpanOptions,
  Tracing,
} from './tracing.ts'
export { tracingConfig, tracingEnvShape } from './tracing-config.ts'
export type { TracingConfig, TracingEnv } from './tracing-config.ts'
// For tests that collect spans in memory instead of exporting them.
export { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace'
export type { ReadableSpan } from '@opentelemetry/sdk-trace'
