import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod'
import { z } from 'zod'
import {
  ErrorCode,
  createSessionRequestSchema,
  hostedRunViewSchema,
  sessionIdSchema,
  sessionViewSchema,
  uuidSchema,
  waitQuerySchema,
} from '@baton/contracts'
import type { ApiDeps } from '../deps.ts'
import { callerNamespace } from '../http/caller.ts'
import { unlessRefused } from '../http/refusals.ts'
import type { ApiTag } from '../http/openapi.ts'
import { Refusals, answer, answers } from '../http/route-answers.ts'
import { abortOnClose } from './delegations.routes.ts'

const tags: readonly ApiTag[] = ['Sessions']

/** Hosted sessions: create one on a profile, read it; one bounded wait on a run's end. */
export function sessionRoutes(deps: ApiDeps): FastifyPluginAsyncZod {
  return async (app) => {
    app.post(
      '/v1/sessions',
      {
        schema: {
          operationId: 'createSession',
          tags,
          summary: 'Create a hosted session',
          description:
            "Creates a session on a profile of the deployment's profiles file (`PROFILES_FILE`): " +
            "its runs (`createRun` with `input`) are executed by the fleet with the profile's " +
            'model, one at a time in admission order, continuing one durable conversation. An ' +
            'unknown profile is refused with nothing written.',
          body: createSessionRequestSchema,
          response: answers(
            { 201: answer('The session', sessionViewSchema) },
            Refusals.tenant,
            Refusals.body,
            [ErrorCode.UnknownProfile],
          ),
        },
      },
      async (request, reply) => {
        const outcome = unlessRefused(
          await deps.hosted.createSession(callerNamespace(request), request.body),
        )
        return reply.status(201).send(outcome.view)
      },
    )

    app.get(
      '/v1/sessions/:sessionId',
      {
        schema: {
          operationId: 'getSession',
          tags,
          summary: 'Read a session',
          description:
            'The session: its profile (null for a host-managed session), metadata, and when its ' +
            'deletion fence was set.',
          params: z.strictObject({ sessionId: sessionIdSchema }),
          response: answers(
            { 200: answer('The session', sessionViewSchema) },
            Refusals.tenant,
            Refusals.params,
            [ErrorCode.SessionNotFound],
          ),
        },
      },
      async (request) =>
        unlessRefused(
          await deps.hosted.readSession(callerNamespace(request), request.params.sessionId),
        ).view,
    )

    app.get(
      '/v1/runs/:runId/wait',
      {
        schema: {
          operationId: 'waitRun',
          tags,
          summary: 'Wait for a run to end',
          description:
            'One bounded wait of at most `timeoutMs` for the run to end: the ended run, or at ' +
            'the bound the run as it is then (never an error for "not ended yet", never a ' +
            'reason to poll in a loop).',
          params: z.strictObject({ runId: uuidSchema }),
          querystring: waitQuerySchema,
          response: answers(
            { 200: answer('The run, ended or as it is at the bound', hostedRunViewSchema) },
            Refusals.tenant,
            Refusals.params,
            Refusals.query,
            [ErrorCode.RunNotFound],
          ),
        },
      },
      async (request, reply) =>
        unlessRefused(
          await deps.hosted.waitRun(
            callerNamespace(request),
            request.params.runId,
            request.query.timeoutMs,
            abortOnClose(reply.raw),
          ),
        ).view,
    )
  }
}
