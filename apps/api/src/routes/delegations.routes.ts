import type { IncomingMessage } from 'node:http'
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod'
import { z } from 'zod'
import {
  delegationRequestSchema,
  idempotencyKeySchema,
  isTerminalView,
  sessionIdSchema,
} from '@baton/contracts'
import type { ApiDeps } from '../deps.ts'
import { unlessRefused } from '../http/refusals.ts'

/**
 * POST /v1/sessions/:sessionId/delegations — accept a delegation: validate (nothing is written for
 * bad input), record it, enqueue after commit, answer 202. With `wait`, hold the request at most
 * `wait.timeoutMs` and answer the terminal result (200) or the snapshot (202).
 */
export function delegationRoutes(deps: ApiDeps): FastifyPluginAsyncZod {
  return async (app) => {
    app.post(
      '/v1/sessions/:sessionId/delegations',
      {
        schema: {
          summary: 'Delegate a task to a named subagent',
          params: z.strictObject({ sessionId: sessionIdSchema }),
          headers: z.looseObject({ 'idempotency-key': idempotencyKeySchema.optional() }),
          body: delegationRequestSchema,
        },
      },
      async (request, reply) => {
        const outcome = unlessRefused(
          await deps.commands.delegate({
            sessionId: request.params.sessionId,
            request: request.body,
            idempotencyKey: request.headers['idempotency-key'],
            signal: abortOnClose(request.raw),
          }),
        )
        if (outcome.view === undefined) return reply.status(202).send(outcome.accepted)
        return reply.status(isTerminalView(outcome.view) ? 200 : 202).send(outcome.view)
      },
    )
  }
}

/** An AbortSignal that fires when the client goes away, so a wait does not outlive its caller. */
export function abortOnClose(raw: IncomingMessage): AbortSignal {
  const controller = new AbortController()
  raw.socket.once('close', () => controller.abort())
  return controller.signal
}
