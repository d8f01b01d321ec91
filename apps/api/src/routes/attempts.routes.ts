import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod'
import { z } from 'zod'
import {
  ErrorCode,
  attemptViewSchema,
  cancelAnswerSchema,
  cancelRequestSchema,
  steerAnswerSchema,
  steerRequestSchema,
  uuidSchema,
  waitQuerySchema,
} from '@baton/contracts'
import type { ApiDeps } from '../deps.ts'
import { callerNamespace } from '../http/caller.ts'
import { unlessRefused } from '../http/refusals.ts'
import { Refusals, answer, answers } from '../http/route-answers.ts'
import { abortOnClose } from './delegations.routes.ts'

const params = z.strictObject({ attemptId: uuidSchema })

export function attemptRoutes(deps: ApiDeps): FastifyPluginAsyncZod {
  return async (app) => {
    app.get(
      '/v1/attempts/:attemptId',
      {
        schema: {
          summary: 'Read an attempt',
          params,
          response: answers(
            { 200: answer('The terminal view, or the snapshot', attemptViewSchema) },
            Refusals.tenant,
            Refusals.params,
            [ErrorCode.AttemptNotFound],
          ),
        },
      },
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
          response: answers(
            {
              200: answer(
                'The terminal view, or the snapshot when the bound expired (never an error)',
                attemptViewSchema,
              ),
            },
            Refusals.tenant,
            Refusals.params,
            Refusals.query,
            [ErrorCode.AttemptNotFound],
          ),
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
      {
        schema: {
          summary: 'Cancel an attempt',
          params,
          body: cancelRequestSchema.nullish(),
          response: answers(
            { 202: answer('The cancel is recorded', cancelAnswerSchema) },
            Refusals.tenant,
            Refusals.params,
            Refusals.body,
            [ErrorCode.AttemptNotFound, ErrorCode.AttemptTerminal],
          ),
        },
      },
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
          response: answers(
            {
              202: answer(
                "The message is recorded (its delivery: the view's `steering`)",
                steerAnswerSchema,
              ),
            },
            Refusals.tenant,
            Refusals.params,
            Refusals.body,
            [ErrorCode.AttemptNotFound, ErrorCode.AttemptTerminal, ErrorCode.SteeringUnsupported],
          ),
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
