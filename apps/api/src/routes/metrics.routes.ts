import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod'
import { METRICS_PATH } from '@baton/observability'
import type { ApiDeps } from '../deps.ts'

/**
 * Prometheus text exposition of this API process (admin key: it names namespaces and shows queue
 * state). Hidden from the OpenAPI document, like the probes: it is for scrapers, not clients.
 */
export function metricsRoutes(deps: ApiDeps): FastifyPluginAsyncZod {
  return async (app) => {
    app.get(METRICS_PATH, { schema: { hide: true } }, async (_request, reply) => {
      const text = await deps.metrics.registry.metrics()
      return reply.header('content-type', deps.metrics.registry.contentType).send(text)
    })
  }
}
