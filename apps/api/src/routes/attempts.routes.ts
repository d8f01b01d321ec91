import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod'
import { z } from 'zod'
import {
  cancelRequestSchema,
  steerRequestSchema,
  uuidSchema,
  waitQuerySchema,
} from '@baton/contracts'
import type { ApiDeps } from '../deps.ts'
import { callerNamespace } from '../http/caller.ts'
import { unlessRefused } from '../http/refusals.ts'
import { abortOnClose } from './delegations.routes.ts'

const params = z.strictObject({ attemptId: uuidSchema })

export function attemptRoutes(deps: ApiDeps): FastifyPluginAsyncZod {
  return async (app) => {
    app.get(
      '/v1/attempts/:attemptId',
      { schema: { summary: 'Read an attempt', params } },
      async (request) =>
        unlessRefused(await deps.commands.read(callerNamespace(request), request.params.attemptId))
          .view,
    )

    app.get(
      '/v1/attempts/:attemptId/wait',
      {
        schema: {
          summary:
            'One bounded wait: the terminal result, or the current snapshot when the bound expires',
          params,
          querystring: waitQuerySchema,
        },
      },
      async (request, reply) =>
        unlessRefused(
          await deps.commands.wait(
            callerNamespace(request),
            request.params.attemptId,
            request.query.timeoutMs,
            abortOnClose(reply.raw),
          ),
        ).view,
    )

    app.post(
      '/v1/attempts/:attemptId/cancel',
      { schema: { summary: 'Cancel an attempt', params, body: cancelRequestSchema.nullish() } },
      async (request, reply) => {
        const { attemptId } = request.params
        const outcome = unlessRefused(
          await deps.commands.cancel(
            callerNamespace(request),
            attemptId,
            request.body?.reason ?? null,
          ),
        )
        return reply.status(202).send({ attemptId, outcome: outcome.kind })
      },
    )

    app.post(
      '/v1/attempts/:attemptId/steer',
      {
        schema: {
          summary: 'Send a steering message to a running (or queued) attempt',
          params,
          body: steerRequestSchema,
        },
      },
      async (request, reply) => {
        const { attemptId } = request.params
        const outcome = unlessRefused(
          await deps.commands.steer(callerNamespace(request), attemptId, request.body.content),
        )
        return reply.status(202).send({ attemptId, sequence: outcome.sequence })
      },
    )
  }
}
