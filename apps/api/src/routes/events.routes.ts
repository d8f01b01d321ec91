import { setTimeout as sleep } from 'node:timers/promises'
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { z } from 'zod'
import { ErrorCode, sessionIdSchema, uuidSchema } from '@baton/contracts'
import type { SessionEventRecord } from '@baton/store'
import type { ApiDeps } from '../deps.ts'
import { callerNamespace } from '../http/caller.ts'
import { unlessRefused } from '../http/refusals.ts'
import type { ApiTag } from '../http/openapi.ts'
import { Refusals, answers } from '../http/route-answers.ts'
import { abortOnClose } from './delegations.routes.ts'

const tags: readonly ApiTag[] = ['Sessions']
const EVENT_STREAM = 'text/event-stream; charset=utf-8'
/** How often a followed stream reads the ledger for more. */
const FOLLOW_READ_MS = 250

const streamQuery = z.strictObject({
  follow: z
    .enum(['true', 'false'])
    .default('true')
    .describe('Keep the stream open for events to come (`false`: the stored events, then the end)'),
  after: z.coerce
    .number()
    .int()
    .min(0)
    .optional()
    .describe('Resume after this event id (as `Last-Event-ID` does; the header wins)'),
})
const streamHeaders = z.object({
  'last-event-id': z
    .string()
    .regex(/^\d{1,15}$/)
    .optional()
    .describe('The id of the last event received: the stream resumes after it'),
})

const sseAnswer = {
  description:
    'Server-Sent Events: `id` the event seq in the session, `event` its kind (`record`, ' +
    '`subagent_started`, `subagent_completed`, `subagent_failed`, `run_queued`, `run_started`, ' +
    "`run_ended`), `data` JSON `{ seq, kind, runId, source, payload, at }`; a child record's " +
    '`source` names the child agent, name, task, attempt, parent run and its own seq',
  content: { [EVENT_STREAM]: { schema: z.string() } },
}

/** One SSE frame of an event. */
function frame(event: SessionEventRecord): string {
  const data = JSON.stringify({
    seq: event.seq,
    kind: event.kind,
    runId: event.runId,
    source: event.source,
    payload: event.payload,
    at: event.at.toISOString(),
  })
  return `id: ${String(event.seq)}\nevent: ${event.kind}\ndata: ${data}\n\n`
}

/**
 * A hosted session's event stream, and a run's: read from the ledger (`session_events`), so a
 * reconnect with `Last-Event-ID` to any API process resumes exactly after the last event seen.
 */
export function eventRoutes(deps: ApiDeps): FastifyPluginAsyncZod {
  async function stream(
    request: FastifyRequest,
    reply: FastifyReply,
    scope: { readonly sessionId: string; readonly runId?: string | undefined },
    query: z.infer<typeof streamQuery>,
    lastEventId: string | undefined,
  ): Promise<void> {
    const namespaceId = callerNamespace(request)
    const signal = abortOnClose(reply.raw)
    let after = lastEventId === undefined ? (query.after ?? 0) : Number(lastEventId)
    reply.hijack()
    reply.raw.writeHead(200, {
      'content-type': EVENT_STREAM,
      'cache-control': 'no-cache',
      'x-accel-buffering': 'no',
    })
    // The head goes out now: a client learns the stream is open before its first event.
    reply.raw.flushHeaders()
    try {
      for (;;) {
        const events = await deps.hosted.readEvents(namespaceId, scope, after)
        if (events.length > 0) {
          reply.raw.write(events.map(frame).join(''))
          after = events.at(-1)?.seq ?? after
          continue
        }
        if (query.follow === 'false' || signal.aborted) break
        if (scope.runId !== undefined) {
          const run = await deps.hosted.readRun(namespaceId, scope.runId)
          // Read once more after the end: the run's last events committed with it.
          if (run.kind === 'run' && !['pending', 'active'].includes(run.view.status)) {
            const last = await deps.hosted.readEvents(namespaceId, scope, after)
            reply.raw.write(last.map(frame).join(''))
            break
          }
        }
        await sleep(FOLLOW_READ_MS, undefined, { signal }).catch(() => undefined)
      }
    } catch (error) {
      request.log.warn({ err: error }, 'event stream ended by an error')
    } finally {
      reply.raw.end()
    }
  }

  return async (app) => {
    app.get(
      '/v1/sessions/:sessionId/events',
      {
        schema: {
          operationId: 'streamSessionEvents',
          tags,
          summary: "Stream a session's events",
          description:
            "The session's events as Server-Sent Events, in order: its parent's records, each " +
            "child's records merged in with their source, the children's lifecycle and the " +
            'runs. Read from the ledger: resume with `Last-Event-ID` (or `after`) on any API ' +
            'process, losing and repeating nothing. A host-managed session has no events.',
          params: z.strictObject({ sessionId: sessionIdSchema }),
          querystring: streamQuery,
          headers: streamHeaders,
          response: answers({ 200: sseAnswer }, Refusals.tenant, Refusals.params, Refusals.query, [
            ErrorCode.SessionNotFound,
          ]),
        },
      },
      async (request, reply) => {
        const scope = unlessRefused(
          await deps.hosted.eventScope(callerNamespace(request), {
            sessionId: request.params.sessionId,
          }),
        )
        await stream(request, reply, scope, request.query, request.headers['last-event-id'])
      },
    )

    app.get(
      '/v1/runs/:runId/events',
      {
        schema: {
          operationId: 'streamRunEvents',
          tags,
          summary: "Stream a run's events",
          description:
            "The run's events as Server-Sent Events (its session's events that belong to it: " +
            "the parent's records of this run, its children's records and lifecycle, the run's " +
            'own), with the ids of the session stream. Followed, it ends once the run has ended.',
          params: z.strictObject({ runId: uuidSchema }),
          querystring: streamQuery,
          headers: streamHeaders,
          response: answers({ 200: sseAnswer }, Refusals.tenant, Refusals.params, Refusals.query, [
            ErrorCode.RunNotFound,
          ]),
        },
      },
      async (request, reply) => {
        const scope = unlessRefused(
          await deps.hosted.eventScope(callerNamespace(request), { runId: request.params.runId }),
        )
        await stream(request, reply, scope, request.query, request.headers['last-event-id'])
      },
    )
  }
}
