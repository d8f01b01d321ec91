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
import type { ApiTag } from '../http/openapi.ts'
import { Refusals, answer, answers } from '../http/route-answers.ts'
import { abortOnClose } from './delegations.routes.ts'

const params = z.strictObject({ attemptId: uuidSchema })
const tags: readonly ApiTag[] = ['Attempts']

export function attemptRoutes(deps: ApiDeps): FastifyPluginAsyncZod {
  return async (app) => {
    app.get(
      '/v1/attempts/:attemptId',
      {
        schema: {
          operationId: 'getAttempt',
          tags,
          summary: 'Read an attempt',
          description:
            'The attempt as it stands: a snapshot while it is `accepted` or `running`, its terminal ' +
            'view (stop reason, output preview, digest, artifact, failure category) once `terminal`.',
          params,
          response: answers(
            { 200: answer('The terminal view, or the snapshot', attemptViewSchema) },
            Refusals.tenant,
            Refusals.params,
            [ErrorCode.AttemptNotFound, ErrorCode.ArtifactIntegrity],
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
          operationId: 'waitAttempt',
          tags,
          summary: 'Wait for an attempt to end',
          description:
            'One bounded wait of at most `timeoutMs`: the terminal view as soon as the attempt ends, ' +
            'or its current snapshot when the bound expires — never an error for "not finished ' +
            'yet", and never a reason to poll in a loop.',
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
          operationId: 'cancelAttempt',
          tags,
          summary: 'Cancel an attempt',
          description:
            'Records the cancel, then tells the owning worker, which aborts the child. A queued ' +
            'attempt is ended at once (`cancelled_queued`); a running one is asked to stop ' +
            '(`cancel_requested`) and its terminal view says how it ended.',
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
          operationId: 'steerAttempt',
          tags,
          summary: 'Steer an attempt',
          description:
            "Sends a message to a running (or queued) attempt's child. The answer says the message " +
            "is recorded, with its sequence; the view's `steering` says which messages reached the " +
            'child, once each and in order.',
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
