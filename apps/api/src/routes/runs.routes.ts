import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod'
import { z } from 'zod'
import {
  BatonError,
  ErrorCode,
  cancelRunRequestSchema,
  completeRunRequestSchema,
  hostedRunViewSchema,
  idempotencyKeySchema,
  runRequestSchema,
  runConsumptionSchema,
  runHeartbeatRequestSchema,
  runLeaseSchema,
  runViewSchema,
  sessionIdSchema,
  uuidSchema,
} from '@baton/contracts'
import type { ApiDeps } from '../deps.ts'
import { callerNamespace } from '../http/caller.ts'
import { unlessRefused } from '../http/refusals.ts'
import type { ApiTag } from '../http/openapi.ts'
import { Refusals, answer, answers, noContent } from '../http/route-answers.ts'
import { abortOnClose } from './delegations.routes.ts'

/** What ending a run can be refused with (a claimed continuation run is ended by its claim). */
const END_REFUSALS = [ErrorCode.RunNotFound, ErrorCode.RunNotActive, ErrorCode.StaleClaim]

const runParams = z.strictObject({ runId: uuidSchema })
const sessionParams = z.strictObject({ sessionId: sessionIdSchema })
const tags: readonly ApiTag[] = ['Runs']

/**
 * A session's parent runs, for hosts that keep their parent agent in their own application:
 * create (optionally consuming suppressed results: an explicit run), keep alive, read, end; and
 * the session's deletion fence.
 */
export function runRoutes(deps: ApiDeps): FastifyPluginAsyncZod {
  return async (app) => {
    app.post(
      '/v1/sessions/:sessionId/runs',
      {
        schema: {
          operationId: 'createRun',
          tags,
          summary: 'Start a run',
          description:
            'On a hosted session (created with a profile): `input` queues a `user` run that the ' +
            "fleet executes with the profile's model, after every run admitted before it; with " +
            '`wait`, one bounded wait of that many milliseconds for its end. Answered 201 with ' +
            'the run (`HostedRunView`). An `Idempotency-Key` makes a retry of the same request ' +
            'answer the run the first one queued and write nothing; the key with another request ' +
            'is `409 IDEMPOTENCY_KEY_REUSED` (keys are per session, apart from delegation keys). ' +
            'On a host-managed session: starts a parent run (a `user` run): delegations that name it hand ' +
            'their results back to it, or to a continuation once it has ended. With `consume`, an ' +
            '`explicit` run that consumes those suppressed results, once each, answered with ' +
            'their receipts and content. The run lives `leaseMs` (default 600000) unless its ' +
            'host renews it (`heartbeat`); then it is `abandoned` and what it held is released.',
          params: sessionParams,
          headers: z.looseObject({
            'idempotency-key': idempotencyKeySchema
              .optional()
              .describe('A hosted run only: a retry with the same key and request is the same run'),
          }),
          body: runRequestSchema.nullish(),
          response: answers(
            {
              201: answer(
                'The run: a hosted run as queued (or ended, with `wait`); a host run active, ' +
                  'with the results it consumed and their receipts',
                z.union([runConsumptionSchema, hostedRunViewSchema]),
              ),
            },
            Refusals.tenant,
            Refusals.params,
            Refusals.body,
            [
              ErrorCode.SessionDeleted,
              ErrorCode.ResultNotConsumable,
              ErrorCode.SessionNotFound,
              ErrorCode.SessionNotHosted,
              ErrorCode.IdempotencyKeyReused,
            ],
          ),
        },
      },
      async (request, reply) => {
        const namespaceId = callerNamespace(request)
        const { sessionId } = request.params
        const body = request.body
        if (body?.input !== undefined) {
          if (body.consume !== undefined || body.leaseMs !== undefined)
            throw new BatonError(
              ErrorCode.ValidationFailed,
              '`input` (a hosted run) does not go with `consume` or `leaseMs` (a host run)',
            )
          const hosted = unlessRefused(
            await deps.hosted.createRun(
              namespaceId,
              sessionId,
              {
                input: body.input,
                waitMs: body.wait,
                idempotencyKey: request.headers['idempotency-key'],
              },
              abortOnClose(reply.raw),
            ),
          )
          return reply.status(201).send(hosted.view)
        }
        if (body?.wait !== undefined)
          throw new BatonError(
            ErrorCode.ValidationFailed,
            '`wait` goes with `input` (a hosted run)',
          )
        // A host run has no key of its own: taking one silently would let a retry start a second.
        if (request.headers['idempotency-key'] !== undefined)
          throw new BatonError(
            ErrorCode.ValidationFailed,
            '`Idempotency-Key` goes with `input` (a hosted run)',
          )
        const session = await deps.hosted.readSession(namespaceId, sessionId)
        if (session.kind === 'session' && session.view.profile !== null)
          unlessRefused({ kind: 'session_not_hosted', sessionId, hosted: true })
        const outcome = unlessRefused(
          await deps.runs.create(namespaceId, sessionId, {
            consume: request.body?.consume ?? [],
            leaseMs: request.body?.leaseMs,
          }),
        )
        return reply.status(201).send({ ...outcome.view, consumed: [...outcome.consumed] })
      },
    )

    app.get(
      '/v1/runs/:runId',
      {
        schema: {
          operationId: 'getRun',
          tags,
          summary: 'Read a run',
          description:
            'The run: its session, trigger, status, cause, when it ended, and while it is ' +
            "active when its lease ends; for a completed hosted run, the parent's answer.",
          params: runParams,
          response: answers(
            { 200: answer('The run', hostedRunViewSchema) },
            Refusals.tenant,
            Refusals.params,
            [ErrorCode.RunNotFound],
          ),
        },
      },
      async (request) =>
        unlessRefused(await deps.hosted.readRun(callerNamespace(request), request.params.runId))
          .view,
    )

    app.post(
      '/v1/runs/:runId/complete',
      {
        schema: {
          operationId: 'completeRun',
          tags,
          summary: 'Complete a run',
          description:
            'Ends the run as completed. `consumed` names the results held for it that it ' +
            'consumed itself, answered with their receipts and content; every other result held ' +
            'for it becomes a continuation. A repeat answers the same.',
          params: runParams,
          body: completeRunRequestSchema.nullish(),
          response: answers(
            {
              200: answer(
                'The run, completed, and the results it consumed (a repeat answers the same)',
                runConsumptionSchema,
              ),
            },
            Refusals.tenant,
            Refusals.params,
            Refusals.body,
            END_REFUSALS,
            [ErrorCode.ResultNotConsumable],
          ),
        },
      },
      async (request) => {
        const outcome = unlessRefused(
          await deps.runs.end(
            callerNamespace(request),
            request.params.runId,
            'completed',
            request.body?.consumed,
          ),
        )
        return { ...outcome.view, consumed: [...outcome.consumed] }
      },
    )

    for (const status of ['failed', 'cancelled'] as const) {
      app.post(
        `/v1/runs/:runId/${status === 'failed' ? 'fail' : 'cancel'}`,
        {
          schema: {
            operationId: status === 'failed' ? 'failRun' : 'cancelRun',
            tags,
            summary: `${status === 'failed' ? 'Fail' : 'Cancel'} a run`,
            description:
              `Ends the run as ${status}. Results held for it are suppressed, keeping their ` +
              'evidence (an explicit run may consume them). A repeat answers the same.' +
              (status === 'cancelled'
                ? ' With `cascade`, every attempt below the run that has not finished (the ' +
                  'children it delegated, and theirs) is cancelled too, each recording the ' +
                  'cascade and this run as its cancel reason.'
                : ''),
            params: runParams,
            body: (status === 'cancelled' ? cancelRunRequestSchema : z.strictObject({})).nullish(),
            response: answers(
              { 200: answer(`The run, ${status} (a repeat answers the same)`, runViewSchema) },
              Refusals.tenant,
              Refusals.params,
              Refusals.body,
              END_REFUSALS,
            ),
          },
        },
        async (request) => {
          const namespaceId = callerNamespace(request)
          const { runId } = request.params
          if (status === 'cancelled') {
            const cascade = (request.body as { cascade?: boolean } | null | undefined)?.cascade
            const hosted = await deps.hosted.cancelRun(namespaceId, runId, cascade === true)
            if (hosted.kind !== 'host_run') return unlessRefused(hosted).view
          }
          return unlessRefused(await deps.runs.end(namespaceId, runId, status)).view
        },
      )
    }

    app.post(
      '/v1/runs/:runId/heartbeat',
      {
        schema: {
          operationId: 'heartbeatRun',
          tags,
          summary: "Extend a run's lease",
          description:
            "Extends the host run's lease by `leaseMs` from now (on the database clock). A run " +
            'whose lease already expired is `abandoned` (`RUN_NOT_ACTIVE`): what it held was ' +
            'released. A claimed continuation run is kept by its claim instead (`STALE_CLAIM`).',
          params: runParams,
          body: runHeartbeatRequestSchema,
          response: answers(
            { 200: answer('The lease is extended', runLeaseSchema) },
            Refusals.tenant,
            Refusals.params,
            Refusals.body,
            END_REFUSALS,
          ),
        },
      },
      async (request) => {
        const outcome = unlessRefused(
          await deps.runs.heartbeatRun(
            callerNamespace(request),
            request.params.runId,
            request.body.leaseMs,
          ),
        )
        return { runId: request.params.runId, leaseExpiresAt: outcome.leaseExpiresAt }
      },
    )

    app.delete(
      '/v1/sessions/:sessionId',
      {
        schema: {
          operationId: 'deleteSession',
          tags,
          summary: 'Delete a session',
          description:
            'Puts the session behind its deletion fence: no delegation, run or continuation is ' +
            'admitted into it from then on (`SESSION_DELETED`), its pending continuations are ' +
            'suppressed, and every record stays as evidence. A repeat answers the same.',
          params: sessionParams,
          response: answers(
            { 204: noContent('The session is behind its deletion fence') },
            Refusals.tenant,
            Refusals.params,
            [ErrorCode.SessionNotFound],
          ),
        },
      },
      async (request, reply) => {
        unlessRefused(
          await deps.runs.deleteSession(callerNamespace(request), request.params.sessionId),
        )
        return reply.status(204).send()
      },
    )
  }
}
