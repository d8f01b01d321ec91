import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod'
import { z } from 'zod'
import {
  BatonError,
  ErrorCode,
  cancelRequestSchema,
  isTerminalView,
  promptToBlocks,
  steerRequestSchema,
  uuidSchema,
  waitQuerySchema,
} from '@baton/contracts'
import { getAttempt, recordSteering, requestCancel } from '@baton/store'
import type { ApiDeps } from '../deps.ts'
import { awaitAttempt } from '../services/await-attempt.ts'
import { abortOnClose } from './delegations.routes.ts'

const params = z.strictObject({ attemptId: uuidSchema })

function notFound(attemptId: string): BatonError {
  return new BatonError(ErrorCode.AttemptNotFound, `no attempt ${attemptId}`)
}

export function attemptRoutes(deps: ApiDeps): FastifyPluginAsyncZod {
  return async (app) => {
    app.get(
      '/v1/attempts/:attemptId',
      { schema: { summary: 'Read an attempt', params } },
      async (request) => {
        const view = await getAttempt(deps.db, request.params.attemptId)
        if (view === undefined) throw notFound(request.params.attemptId)
        return view
      },
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
      async (request) => {
        const view = await awaitAttempt(
          deps,
          request.params.attemptId,
          request.query.timeoutMs,
          abortOnClose(request.raw),
        )
        if (view === undefined) throw notFound(request.params.attemptId)
        return view
      },
    )

    app.post(
      '/v1/attempts/:attemptId/cancel',
      { schema: { summary: 'Cancel an attempt', params, body: cancelRequestSchema.nullish() } },
      async (request, reply) => {
        const { attemptId } = request.params
        const outcome = await requestCancel(deps.db, {
          attemptId,
          reason: request.body?.reason ?? null,
        })
        switch (outcome) {
          case 'missing':
            throw notFound(attemptId)
          case 'already_terminal':
            throw new BatonError(ErrorCode.AttemptTerminal, 'the attempt is already terminal')
          case 'cancelled_queued':
            await deps.publisher
              .publish({ eventName: 'terminal', attemptId })
              .catch((error: unknown) =>
                request.log.warn({ err: error, attemptId }, 'terminal doorbell not published'),
              )
            break
          case 'cancel_requested':
            // Recorded first; the event only shortens the time until the owner notices.
            await deps.publisher
              .publish({ eventName: 'cancel', attemptId })
              .catch((error: unknown) =>
                request.log.warn(
                  { err: error, attemptId },
                  'cancel event not published; heartbeat will deliver it',
                ),
              )
            break
          default: {
            const unexpected: never = outcome
            throw new Error(`unexpected outcome ${String(unexpected)}`)
          }
        }
        request.log.info({ attemptId, outcome }, 'cancel recorded')
        return reply.status(202).send({ attemptId, outcome })
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
        const view = await getAttempt(deps.db, attemptId)
        if (view === undefined) throw notFound(attemptId)
        if (isTerminalView(view))
          throw new BatonError(ErrorCode.AttemptTerminal, 'the attempt is already terminal')
        if (!deps.steerableSubagents.has(view.name)) {
          throw new BatonError(
            ErrorCode.SteeringUnsupported,
            `subagent "${view.name}" cannot be steered`,
          )
        }
        const outcome = await recordSteering(deps.db, {
          attemptId,
          content: promptToBlocks(request.body.content),
        })
        switch (outcome.kind) {
          case 'missing':
            throw notFound(attemptId)
          case 'terminal':
            throw new BatonError(ErrorCode.AttemptTerminal, 'the attempt is already terminal')
          case 'recorded':
            break
          default: {
            const unexpected: never = outcome
            throw new Error(`unexpected outcome ${JSON.stringify(unexpected)}`)
          }
        }
        // Recorded first; the event only shortens the time until the owner delivers it.
        await deps.publisher
          .publish({ eventName: 'steer', attemptId })
          .catch((error: unknown) =>
            request.log.warn(
              { err: error, attemptId },
              'steer event not published; heartbeat will deliver it',
            ),
          )
        request.log.info({ attemptId, sequence: outcome.sequence }, 'steering recorded')
        return reply.status(202).send({ attemptId, sequence: outcome.sequence })
      },
    )
  }
}
