import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod'
import { z } from 'zod'
import {
  ErrorCode,
  claimFenceSchema,
  claimRequestSchema,
  continuationClaimSchema,
  continuationLeaseSchema,
  continuationSettledSchema,
  heartbeatRequestSchema,
  sessionIdSchema,
  uuidSchema,
} from '@baton/contracts'
import type { ApiDeps } from '../deps.ts'
import { callerNamespace } from '../http/caller.ts'
import { unlessRefused } from '../http/refusals.ts'
import { Refusals, answer, answers, noContent } from '../http/route-answers.ts'
import { abortOnClose } from './delegations.routes.ts'

const runParams = z.strictObject({ runId: uuidSchema })

/**
 * Host-side consumption of continuations: claim the next one of a session (one bounded wait),
 * keep its lease, and settle it — every call after the claim fenced by the claim it names.
 */
export function continuationRoutes(deps: ApiDeps): FastifyPluginAsyncZod {
  return async (app) => {
    app.post(
      '/v1/sessions/:sessionId/continuations/claim',
      {
        schema: {
          summary: "Claim the session's next continuation: one bounded wait, 204 when none came",
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
          summary: "Extend a claimed continuation's lease",
          params: runParams,
          body: heartbeatRequestSchema,
          response: answers(
            { 200: answer('The lease is extended', continuationLeaseSchema) },
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
            summary: `Settle a claimed continuation as ${status}; an exact retry answers the same receipt`,
            params: runParams,
            body: claimFenceSchema,
            response: answers(
              { 200: answer('The receipt, and where delivery stands', continuationSettledSchema) },
              Refusals.tenant,
              Refusals.params,
              Refusals.body,
              [ErrorCode.RunNotFound, ErrorCode.RunNotActive, ErrorCode.StaleClaim],
            ),
          },
        },
        async (request) =>
          unlessRefused(
            await deps.runs.settleContinuation(
              callerNamespace(request),
              request.params.runId,
              request.body,
              status,
            ),
          ).settled,
      )
    }
  }
}
