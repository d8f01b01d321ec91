import { randomUUID } from 'node:crypto'
import type { IncomingMessage } from 'node:http'
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod'
import { z } from 'zod'
import {
  BatonError,
  ErrorCode,
  delegationRequestSchema,
  idempotencyKeySchema,
  requestDigest,
  isTerminalView,
  promptToBlocks,
  sessionIdSchema,
} from '@baton/contracts'
import {
  acceptDelegation,
  acceptIdempotent,
  type IdempotentAcceptOutcome,
  type NewDelegationInput,
} from '@baton/store'
import type { ApiDeps } from '../deps.ts'
import { awaitAttempt, awaitSubscribed } from '../services/await-attempt.ts'

/**
 * POST /v1/sessions/:sessionId/delegations — accept a delegation: validate (nothing is written for
 * bad input), record it in one statement, enqueue after commit, answer 202. With `wait`, hold the
 * request at most `wait.timeoutMs` and answer the terminal result (200) or the snapshot (202).
 */
export function delegationRoutes(deps: ApiDeps): FastifyPluginAsyncZod {
  const known = deps.subagentNames
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
        const { sessionId } = request.params
        const input = request.body
        if (!known.has(input.name)) {
          throw new BatonError(ErrorCode.UnknownSubagent, `no subagent named "${input.name}"`, {
            details: { known: [...known] },
          })
        }
        const attemptId = randomUUID()
        const fresh = {
          sessionId,
          name: input.name,
          prompt: promptToBlocks(input.prompt),
          metadata: input.metadata ?? {},
          attemptId,
          newAgentId: randomUUID(),
        }
        const idempotencyKey = request.headers['idempotency-key']
        const outcome = await admit(
          deps,
          fresh,
          input.agentId,
          idempotencyKey === undefined
            ? undefined
            : {
                idempotencyKey,
                requestDigest: requestDigest({
                  name: input.name,
                  prompt: fresh.prompt,
                  agentId: input.agentId ?? null,
                  metadata: fresh.metadata,
                }),
              },
        )
        switch (outcome.kind) {
          case 'agent_not_found':
            throw new BatonError(
              ErrorCode.AgentNotFound,
              `no agent ${input.agentId ?? ''} named "${input.name}" in session "${sessionId}"`,
            )
          case 'agent_busy':
            throw new BatonError(
              ErrorCode.AgentBusy,
              'the agent already has an attempt that is not terminal',
              {
                details: { agentId: input.agentId },
              },
            )
          case 'key_reused':
            throw new BatonError(
              ErrorCode.IdempotencyKeyReused,
              'this Idempotency-Key was already used in this session with a different request',
            )
          case 'accepted':
          case 'replayed':
            break
          default: {
            const unexpected: never = outcome
            throw new Error(`unexpected outcome ${JSON.stringify(unexpected)}`)
          }
        }
        // A replayed key answers with the attempt it created the first time.
        const acceptedId = outcome.attemptId
        const accepted = {
          agentId: outcome.agentId,
          attemptId: acceptedId,
          status: 'accepted' as const,
        }
        request.log.debug(
          {
            attemptId: acceptedId,
            agentId: outcome.agentId,
            subagent: input.name,
            outcome: outcome.kind,
          },
          'delegation accepted',
        )
        if (outcome.kind === 'replayed') {
          // The first request already enqueued it (or the reconciler will): answer as it stands.
          if (input.wait === undefined) return reply.status(202).send(accepted)
          const current = await awaitAttempt(
            deps,
            acceptedId,
            input.wait.timeoutMs,
            abortOnClose(request.raw),
          )
          if (current === undefined) throw new Error('replayed attempt vanished')
          return reply.status(isTerminalView(current) ? 200 : 202).send(current)
        }
        // Submit-and-wait subscribes before the job exists, so no completion can ring unheard and
        // the ledger need not be read before the wait: the attempt was accepted just now.
        const subscription =
          input.wait === undefined ? undefined : deps.doorbell.subscribe(acceptedId)
        // Accepted is durable; an enqueue that fails is finished by the reconciler.
        await deps.admission.enqueue(acceptedId)
        if (input.wait === undefined || subscription === undefined)
          return reply.status(202).send(accepted)
        const view = await awaitSubscribed(
          deps,
          acceptedId,
          subscription,
          input.wait.timeoutMs,
          abortOnClose(request.raw),
        )
        if (view === undefined) throw new Error('accepted attempt vanished')
        return reply.status(isTerminalView(view) ? 200 : 202).send(view)
      },
    )
  }
}

/**
 * Records the delegation: a new one through the batched admission (keyed or not), a continuation
 * of `agentId` in a statement of its own.
 */
function admit(
  deps: ApiDeps,
  fresh: NewDelegationInput,
  agentId: string | undefined,
  keyed: { readonly idempotencyKey: string; readonly requestDigest: string } | undefined,
): Promise<IdempotentAcceptOutcome> {
  if (keyed !== undefined) {
    return agentId === undefined
      ? deps.admission.acceptNewIdempotent({ ...fresh, ...keyed })
      : acceptIdempotent(deps.db, { ...fresh, agentId, ...keyed })
  }
  if (agentId !== undefined) return acceptDelegation(deps.db, { ...fresh, agentId })
  return deps.admission
    .acceptNew(fresh)
    .then(() => ({ kind: 'accepted', agentId: fresh.newAgentId, attemptId: fresh.attemptId }))
}

/** An AbortSignal that fires when the client goes away, so a wait does not outlive its caller. */
export function abortOnClose(raw: IncomingMessage): AbortSignal {
  const controller = new AbortController()
  raw.socket.once('close', () => controller.abort())
  return controller.signal
}
