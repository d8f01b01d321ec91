import {
  startMetricsServer,
  type Logger,
  type MetricsServer,
  type WorkerMetrics,
} from '@baton/observability'
import type { WorkerConfig } from './config.ts'

/**
 * Serves this worker's `GET /metrics` on `METRICS_HOST:METRICS_PORT` (0: none). A port another
 * process holds (several workers on one host without a port each) is logged and the worker runs
 * on without an endpoint: metrics never stop a worker from working.
 */
export async function serveWorkerMetrics(
  config: WorkerConfig,
  metrics: WorkerMetrics,
  logger: Logger,
): Promise<MetricsServer | undefined> {
  if (config.metricsPort === 0) return undefined
  try {
    const server = await startMetricsServer({
      registry: metrics.registry,
      host: config.metricsHost,
      port: config.metricsPort,
    })
    logger.info({ url: server.url }, 'metrics endpoint listening')
    return server
  } catch (error) {
    logger.error(
      { err: error, host: config.metricsHost, port: config.metricsPort },
      'metrics endpoint could not listen; running without it',
    )
    return undefined
  }
}
