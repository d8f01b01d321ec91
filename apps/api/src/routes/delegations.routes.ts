import type { ServerResponse } from 'node:http'
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod'
import { z } from 'zod'
import {
  BatonError,
  ErrorCode,
  attemptSnapshotSchema,
  batchAnswerSchema,
  batchItemSchema,
  delegationAcceptedSchema,
  delegationRequestSchema,
  idempotencyKeySchema,
  isTerminalView,
  sessionIdSchema,
  terminalAttemptViewSchema,
  type AttemptSnapshot,
} from '@baton/contracts'
import type { ApiDeps } from '../deps.ts'
import { callerNamespace } from '../http/caller.ts'
import { errorAnswer } from '../http/errors.ts'
import type { ApiTag } from '../http/openapi.ts'
import { isRefusal, refusalError, unlessRefused } from '../http/refusals.ts'
import { Refusals, answer, answers } from '../http/route-answers.ts'

/** What accepting one delegation can be refused with (a batch item gets the same, per item). */
const DELEGATION_REFUSALS = [
  ErrorCode.ValidationFailed,
  ErrorCode.UnknownSubagent,
  ErrorCode.SubagentUnavailable,
  ErrorCode.AgentNotFound,
  ErrorCode.RunNotFound,
  ErrorCode.RunNotActive,
  ErrorCode.AgentBusy,
  ErrorCode.IdempotencyKeyReused,
  ErrorCode.SessionDeleted,
  ErrorCode.ParentAttemptEnded,
  ErrorCode.BudgetExceeded,
]

const tags: readonly ApiTag[] = ['Delegations']

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
          operationId: 'createDelegation',
          tags,
          summary: 'Delegate a task to a subagent',
          description:
            'Accepts a task for a named subagent: records a new attempt (of a new agent, or of the ' +
            'agent `agentId` names, to continue it) and queues it; nothing is written for bad ' +
            'input. With `parentRunId`, the result is handed back to that run or to a ' +
            'continuation. With `wait`, the request is held at most `wait.timeoutMs`. An ' +
            '`Idempotency-Key` makes a retry answer the first attempt and write nothing.',
          params: z.strictObject({ sessionId: sessionIdSchema }),
          headers: z.looseObject({ 'idempotency-key': idempotencyKeySchema.optional() }),
          body: delegationRequestSchema,
          response: answers(
            {
              200: answer(
                'With `wait`: the attempt ended within the bound',
                terminalAttemptViewSchema,
              ),
              202: answer(
                'Accepted (`DelegationAccepted`); with `wait`, the snapshot when the bound expired',
                z.union([delegationAcceptedSchema, attemptSnapshotSchema]),
              ),
            },
            Refusals.tenant,
            Refusals.params,
            Refusals.body,
            DELEGATION_REFUSALS,
          ),
        },
      },
      async (request, reply) => {
        const outcome = unlessRefused(
          await deps.commands.delegate({
            namespaceId: callerNamespace(request),
            sessionId: request.params.sessionId,
            request: request.body,
            idempotencyKey: request.headers['idempotency-key'],
            signal: abortOnClose(reply.raw),
          }),
        )
        const { view } = outcome
        if (view === undefined) return reply.status(202).send(outcome.accepted)
        if (isTerminalView(view)) return reply.status(200).send(view)
        // Not terminal: the snapshot of an accepted or running attempt.
        return reply.status(202).send(view as AttemptSnapshot)
      },
    )

    app.post(
      '/v1/sessions/:sessionId/delegations/batch',
      {
        schema: {
          operationId: 'createDelegationBatch',
          tags,
          summary: 'Delegate many tasks at once',
          description:
            'Records every valid item in one ledger statement and queues them at once. Each item ' +
            'is checked on its own and answered in order: its `202`, or the error the single ' +
            'route would give it (issue paths under `body/items/<index>/`); a refused item writes ' +
            "nothing and fails no other. An item's `idempotencyKey` works as the header does.",
          params: z.strictObject({ sessionId: sessionIdSchema }),
          body: z.strictObject({
            items: z.array(z.unknown()).min(1).max(deps.config.batchMaxItems),
          }),
          response: answers(
            {
              200: answer(
                "One answer per item, in order: the item's `202`, or the error the single route would give it",
                batchAnswerSchema,
              ),
            },
            Refusals.tenant,
            Refusals.params,
            Refusals.body,
          ),
        },
      },
      async (request, reply) => {
        // Each item is checked on its own, so one bad item is refused alone and fails no other.
        const parsed = request.body.items.map((item) => batchItemSchema.safeParse(item))
        const outcomes = await deps.commands.delegateBatch(
          callerNamespace(request),
          request.params.sessionId,
          parsed.flatMap((p) => (p.success ? [p.data] : [])),
        )
        let next = 0
        const results = parsed.map((p, index) => {
          const at = `body/items/${index}`
          if (!p.success) {
            return errorAnswer(
              new BatonError(ErrorCode.ValidationFailed, `invalid item ${index}`, {
                details: {
                  issues: p.error.issues.map((issue) => ({
                    path: [at, ...issue.path.map(String)].join('/'),
                    message: issue.message,
                  })),
                },
              }),
            )
          }
          const outcome = outcomes[next]
          next += 1
          if (outcome === undefined) throw new Error('fewer answers than valid items')
          if (isRefusal(outcome)) return errorAnswer(itemError(refusalError(outcome), at))
          return {
            status: 202 as const,
            body: { ...outcome.accepted, replayed: outcome.kind === 'replayed' },
          }
        })
        return reply.status(200).send({ results })
      },
    )
  }
}

/** A refusal of one batch item, its issue paths under the item's own (`body/items/3/prompt/…`). */
function itemError(error: BatonError, at: string): BatonError {
  const issues = error.details?.issues
  if (!Array.isArray(issues)) return error
  return new BatonError(error.code, error.message, {
    details: {
      ...error.details,
      issues: issues.map((issue: { path: string; message: string }) => ({
        ...issue,
        path: issue.path.replace(/^body/, at),
      })),
    },
  })
}

/**
 * An AbortSignal that fires when the client goes away, so a wait does not outlive its caller. It
 * listens on the response ('close': sent, or its connection lost), not on the socket, where a
 * kept-alive connection would gather one listener per request for as long as it stays open.
 */
export function abortOnClose(response: ServerResponse): AbortSignal {
  const controller = new AbortController()
  response.once('close', () => controller.abort(CALLER_GONE))
  return controller.signal
}

/**
 * The reason every such signal carries. Made once: `abort()` without a reason builds a
 * DOMException (with its stack) per request, a cost every request would pay.
 */
const CALLER_GONE = new Error('the caller went away')
