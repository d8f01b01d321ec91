import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod'
import { z } from 'zod'
import { BatonError, ErrorCode, agentHistoryViewSchema, uuidSchema } from '@baton/contracts'
import { getAgentHistory } from '@baton/store'
import type { ApiDeps } from '../deps.ts'
import { callerNamespace } from '../http/caller.ts'
import type { ApiTag } from '../http/openapi.ts'
import { Refusals, answer, answers } from '../http/route-answers.ts'

const params = z.strictObject({ agentId: uuidSchema })
const tags: readonly ApiTag[] = ['Agents']

export function agentRoutes(deps: ApiDeps): FastifyPluginAsyncZod {
  return async (app) => {
    app.get(
      '/v1/agents/:agentId/context',
      {
        schema: {
          operationId: 'getAgentHistory',
          tags,
          summary: "Read an agent's history",
          description:
            "The agent's durable history: the conversation events its attempts' terminal commits " +
            'appended, numbered from 0. A delegation that names the agent (`agentId`) resumes the ' +
            'child from exactly this history.',
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
