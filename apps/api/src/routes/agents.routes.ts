import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod'
import { z } from 'zod'
import { BatonError, ErrorCode, agentHistoryViewSchema, uuidSchema } from '@baton/contracts'
import { getAgentHistory } from '@baton/store'
import type { ApiDeps } from '../deps.ts'
import { callerNamespace } from '../http/caller.ts'
import { Refusals, answer, answers } from '../http/route-answers.ts'

const params = z.strictObject({ agentId: uuidSchema })

export function agentRoutes(deps: ApiDeps): FastifyPluginAsyncZod {
  return async (app) => {
    app.get(
      '/v1/agents/:agentId/context',
      {
        schema: {
          summary:
            "Read an agent's durable history: the events its attempts' terminal commits appended",
          params,
          response: answers(
            { 200: answer("The agent's history, in order", agentHistoryViewSchema) },
            Refusals.tenant,
            Refusals.params,
            [ErrorCode.AgentNotFound],
          ),
        },
      },
      async (request) => {
        const view = await getAgentHistory(deps.db, request.params.agentId, {
          namespaceId: callerNamespace(request),
        })
        if (view === undefined)
          throw new BatonError(ErrorCode.AgentNotFound, `no agent ${request.params.agentId}`)
        return view
      },
    )
  }
}
