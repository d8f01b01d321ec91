import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance } from 'fastify'
import rateLimit from '@fastify/rate-limit'
import swagger from '@fastify/swagger'
import swaggerUi from '@fastify/swagger-ui'
import { createBullBoard } from '@bull-board/api'
import { FastifyAdapter } from '@bull-board/fastify'
import { validatorCompiler, type ZodTypeProvider } from 'fastify-type-provider-zod'
import type { ApiDeps } from './deps.ts'
import { BatonError, ErrorCode, Limits } from '@baton/contracts'
import { installAuthentication } from './http/caller.ts'
import { installRequestTracing } from './http/request-tracing.ts'
import {
  clientErrorHandler,
  errorHandler,
  frameworkErrorHandler,
  notFoundHandler,
} from './http/errors.ts'
import { jsonSerializerCompiler, openApiOptions } from './http/openapi.ts'
import { adminRoutes } from './routes/admin.routes.ts'
import { agentRoutes } from './routes/agents.routes.ts'
import { artifactRoutes } from './routes/artifacts.routes.ts'
import { webhookRoutes } from './routes/webhooks.routes.ts'
import { attemptRoutes } from './routes/attempts.routes.ts'
import { continuationRoutes } from './routes/continuations.routes.ts'
import { boardQueues, dashboardRoutes } from './routes/dashboard.routes.ts'
import { delegationRoutes } from './routes/delegations.routes.ts'
import { healthRoutes } from './routes/health.routes.ts'
import { metricsRoutes } from './routes/metrics.routes.ts'
import { runRoutes } from './routes/runs.routes.ts'
import { sessionRoutes } from './routes/sessions.routes.ts'
import { eventRoutes } from './routes/events.routes.ts'

export const DASHBOARD_PATH = '/admin/queues'
export const DOCS_PATH = '/docs'

/** Builds the HTTP server over its dependencies. main.ts (or a test) owns their lifetimes. */
export type BatonServer = FastifyInstance

export async function buildServer(deps: ApiDeps): Promise<BatonServer> {
  const httpLogger: FastifyBaseLogger = deps.logger.child({ component: 'http' })
  const app = Fastify({
    loggerInstance: httpLogger,
    bodyLimit: deps.config.bodyLimitBytes,
    // Above the longest parameter Baton documents (a session id), so such ids reach validation
    // and a longer one is refused there (400) rather than by the router.
    routerOptions: { maxParamLength: 2 * Limits.sessionIdChars },
    frameworkErrors: frameworkErrorHandler,
    clientErrorHandler,
    // Per-request access logs would dominate at thousands of delegations a second; routes log
    // what matters (accepts that fail to enqueue, cancels, errors) with ids in fields.
    logController: new LogController({ disableRequestLogging: true }),
  }).withTypeProvider<ZodTypeProvider>()
  app.setValidatorCompiler(validatorCompiler)
  app.setSerializerCompiler(jsonSerializerCompiler)
  app.setErrorHandler(errorHandler)
  app.setNotFoundHandler(notFoundHandler)
  // Fastify parses text/plain by default; Baton takes JSON only, so anything else is a 415.
  app.removeContentTypeParser('text/plain')
  if (deps.tracing.enabled) installRequestTracing(app, deps.tracing)
  installAuthentication(app, {
    keys: deps.keys,
    adminApiKey: deps.config.adminApiKey,
    logger: deps.logger,
  })
  if (deps.config.rateLimitMax > 0) await installRateLimit(app, deps)

  await app.register(swagger, openApiOptions([DASHBOARD_PATH]))
  await app.register(swaggerUi, { routePrefix: DOCS_PATH })

  const board = new FastifyAdapter()
  createBullBoard({ queues: boardQueues(deps.queues), serverAdapter: board })
  board.setBasePath(DASHBOARD_PATH)
  await app.register(board.registerPlugin(), { prefix: DASHBOARD_PATH })

  await app.register(healthRoutes(deps))
  await app.register(metricsRoutes(deps))
  await app.register(delegationRoutes(deps))
  await app.register(attemptRoutes(deps))
  await app.register(agentRoutes(deps))
  await app.register(adminRoutes(deps))
  await app.register(sessionRoutes(deps))
  await app.register(eventRoutes(deps))
  await app.register(runRoutes(deps))
  await app.register(continuationRoutes(deps))
  await app.register(artifactRoutes(deps))
  await app.register(webhookRoutes(deps))
  await app.register(dashboardRoutes(deps, { queueDashboardPath: DASHBOARD_PATH }))
  return app
}

/**
 * Per-key rate limits, counted in Redis so every API process shares them. A tenant's key is
 * limited (after authentication, before its body is parsed); probes and the admin are not.
 */
async function installRateLimit(app: BatonServer, deps: ApiDeps): Promise<void> {
  await app.register(rateLimit, {
    global: true,
    hook: 'preParsing',
    max: deps.config.rateLimitMax,
    timeWindow: deps.config.rateLimitWindowMs,
    redis: deps.redis,
    nameSpace: `${deps.config.queuePrefix}:rate-limit:`,
    allowList: (request) => request.caller?.kind !== 'tenant',
    keyGenerator: (request) =>
      request.caller?.kind === 'tenant' ? request.caller.keyId : request.ip,
    addHeadersOnExceeding: {
      'x-ratelimit-limit': true,
      'x-ratelimit-remaining': true,
      'x-ratelimit-reset': true,
    },
    addHeaders: {
      'x-ratelimit-limit': true,
      'x-ratelimit-remaining': true,
      'x-ratelimit-reset': true,
      'retry-after': true,
    },
    errorResponseBuilder: (_request, context) =>
      new BatonError(
        ErrorCode.RateLimited,
        `rate limit of ${context.max} requests per ${context.after} reached; retry in ${Math.ceil(context.ttl / 1000)} s`,
        { retryable: true, details: { retryAfterSeconds: Math.ceil(context.ttl / 1000) } },
      ),
  })
}
