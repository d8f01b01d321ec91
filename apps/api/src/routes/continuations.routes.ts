import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod'
import { z } from 'zod'
import {
  ErrorCode,
  claimFenceSchema,
  claimRequestSchema,
  continuationClaimSchema,
  continuationConclusionSchema,
  heartbeatRequestSchema,
  runLeaseSchema,
  sessionIdSchema,
  uuidSchema,
} from '@baton/contracts'
import type { ApiDeps } from '../deps.ts'
import { callerNamespace } from '../http/caller.ts'
import { unlessRefused } from '../http/refusals.ts'
import type { ApiTag } from '../http/openapi.ts'
import { Refusals, answer, answers, noContent } from '../http/route-answers.ts'
import { abortOnClose } from './delegations.routes.ts'

const runParams = z.strictObject({ runId: uuidSchema })
const tags: readonly ApiTag[] = ['Continuations']

/**
 * Host-side consumption of continuations: claim the next one of a session (one bounded wait),
 * keep its lease, and conclude it — every call after the claim fenced by the claim it names.
 */
export function continuationRoutes(deps: ApiDeps): FastifyPluginAsyncZod {
  return async (app) => {
    app.post(
      '/v1/sessions/:sessionId/continuations/claim',
      {
        schema: {
          operationId: 'claimContinuation',
          tags,
          summary: "Claim the session's next continuation",
          description:
            'One bounded wait of at most `timeoutMs` for the next continuation of the session: ' +
            'its input, the receipt binding that input to its digest, its content resolved now ' +
            '(past its retention deadline, the expiry summary), and a claim whose lease lasts ' +
            '`leaseMs`; `204` when none came. Every later call names the claim.',
          params: z.strictObject({ sessionId: sessionIdSchema }),
          body: claimRequestSchema,
          response: answers(
            {
              200: answer('The claimed continuation, with its fence', continuationClaimSchema),
              204: noContent('None came within `timeoutMs`'),
            },
            Refusals.tenant,
            Refusals.params,
            Refusals.body,
          ),
        },
      },
      async (request, reply) => {
        const outcome = await deps.runs.claim({
          namespaceId: callerNamespace(request),
          sessionId: request.params.sessionId,
          timeoutMs: request.body.timeoutMs,
          leaseMs: request.body.leaseMs,
          signal: abortOnClose(reply.raw),
        })
        if (outcome.kind === 'none') return reply.status(204).send()
        return reply.status(200).send(outcome.claim)
      },
    )

    app.post(
      '/v1/continuations/:runId/heartbeat',
      {
        schema: {
          operationId: 'heartbeatContinuation',
          tags,
          summary: "Extend a continuation's lease",
          description:
            "Extends the claim's lease by `leaseMs` from now (on the database clock). A claim that " +
            'is not current, or whose lease expired, is refused with `STALE_CLAIM`.',
          params: runParams,
          body: heartbeatRequestSchema,
          response: answers(
            { 200: answer('The lease is extended', runLeaseSchema) },
            Refusals.tenant,
            Refusals.params,
            Refusals.body,
            [ErrorCode.RunNotFound, ErrorCode.StaleClaim],
          ),
        },
      },
      async (request) => {
        const { leaseMs, ...fence } = request.body
        const outcome = unlessRefused(
          await deps.runs.heartbeat(callerNamespace(request), request.params.runId, fence, leaseMs),
        )
        return { runId: request.params.runId, leaseExpiresAt: outcome.leaseExpiresAt }
      },
    )

    for (const status of ['completed', 'failed'] as const) {
      app.post(
        `/v1/continuations/:runId/${status === 'completed' ? 'complete' : 'fail'}`,
        {
          schema: {
            operationId: status === 'completed' ? 'completeContinuation' : 'failContinuation',
            tags,
            summary: `${status === 'completed' ? 'Complete' : 'Fail'} a continuation`,
            description:
              `Concludes the claimed continuation as ${status}` +
              (status === 'completed'
                ? ': its result is delivered. '
                : ': its result is suppressed (an explicit run may consume it). ') +
              'An exact retry answers the same receipt.',
            params: runParams,
            body: claimFenceSchema,
            response: answers(
              {
                200: answer('The receipt, and where delivery stands', continuationConclusionSchema),
              },
              Refusals.tenant,
              Refusals.params,
              Refusals.body,
              [ErrorCode.RunNotFound, ErrorCode.RunNotActive, ErrorCode.StaleClaim],
            ),
          },
        },
        async (request) =>
          unlessRefused(
            await deps.runs.concludeContinuation(
              callerNamespace(request),
              request.params.runId,
              request.body,
              status,
            ),
          ).conclusion,
      )
    }
  }
}
