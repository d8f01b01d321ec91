import { randomBytes, randomUUID } from 'node:crypto'
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod'
import { z } from 'zod'
import {
  BatonError,
  ErrorCode,
  namespaceIdSchema,
  registerWebhookRequestSchema,
  registeredWebhookSchema,
  sessionIdSchema,
  webhookDeliveryListSchema,
  webhookDeliveryQuerySchema,
  webhookUrlRefusal,
  webhookViewSchema,
  type RegisterWebhookRequest,
  type RegisteredWebhook,
  type WebhookView,
} from '@baton/contracts'
import {
  getWebhook,
  listWebhookDeliveries,
  registerWebhook,
  removeWebhook,
  type WebhookRecord,
  type WebhookScope,
} from '@baton/store'
import type { ApiDeps } from '../deps.ts'
import { callerNamespace } from '../http/caller.ts'
import type { ApiTag } from '../http/openapi.ts'
import { Refusals, answer, answers, noContent } from '../http/route-answers.ts'

const tags: readonly ApiTag[] = ['Webhooks']
const adminTags: readonly ApiTag[] = ['Admin']
const adminSecurity = [{ adminKey: [] }]
const sessionParams = z.strictObject({ sessionId: sessionIdSchema })
const namespaceParams = z.strictObject({ namespaceId: namespaceIdSchema })

const REGISTER_DESCRIPTION =
  'Registers the endpoint, or replaces its URL and secret. Terminal attempts ' +
  '(`attempt.terminal`) and admitted continuations (`continuation.admitted`) are POSTed to it, ' +
  'signed as Standard Webhooks says (`webhook-id`, `webhook-timestamp`, `webhook-signature`) ' +
  'with the secret sent, or one Baton makes (`whsec_…`): this answer is the only one that shows ' +
  "it. A continuation's delivery is its claim: a 2xx delivers it, anything else is retried with " +
  "the same `webhook-id`. The URL must pass the operator's destination policy " +
  '(`WEBHOOK_URL_REFUSED` otherwise).'

/**
 * Webhook registration (a session's, over a tenant key; a namespace's, over the admin key) and the
 * tenant's view of its deliveries. Delivery itself runs in the workers.
 */
export function webhookRoutes(deps: ApiDeps): FastifyPluginAsyncZod {
  const log = deps.logger.child({ component: 'webhooks' })

  async function register(
    scope: WebhookScope,
    body: RegisterWebhookRequest,
  ): Promise<RegisteredWebhook> {
    const refusal = webhookUrlRefusal(body.url, deps.config.webhookPolicy)
    if (refusal !== undefined) {
      throw new BatonError(ErrorCode.WebhookUrlRefused, `the webhook URL is refused: ${refusal}`, {
        details: { reason: refusal },
      })
    }
    const secret = body.secret ?? `whsec_${randomBytes(32).toString('base64')}`
    const outcome = await registerWebhook(deps.db, {
      ...scope,
      id: randomUUID(),
      url: body.url,
      secret,
    })
    if (outcome.kind === 'namespace_missing')
      throw new BatonError(ErrorCode.NamespaceNotFound, `no namespace ${scope.namespaceId}`)
    log.info({ namespaceId: scope.namespaceId, sessionId: scope.sessionId }, 'webhook registered')
    return { ...webhookView(outcome.webhook), secret }
  }

  async function read(scope: WebhookScope): Promise<WebhookView> {
    const webhook = await getWebhook(deps.db, scope)
    if (webhook === undefined) throw webhookNotFound(scope)
    return webhookView(webhook)
  }

  async function remove(scope: WebhookScope): Promise<void> {
    if (!(await removeWebhook(deps.db, scope))) throw webhookNotFound(scope)
    log.info({ namespaceId: scope.namespaceId, sessionId: scope.sessionId }, 'webhook removed')
  }

  return async (app) => {
    const sessionScope = (request: { params: { sessionId: string } }, ns: string) => ({
      namespaceId: ns,
      sessionId: request.params.sessionId,
    })

    app.put(
      '/v1/sessions/:sessionId/webhook',
      {
        schema: {
          operationId: 'registerSessionWebhook',
          tags,
          summary: "Register the session's webhook",
          description: `${REGISTER_DESCRIPTION} It takes the session's events instead of the namespace's webhook.`,
          params: sessionParams,
          body: registerWebhookRequestSchema,
          response: answers(
            { 200: answer('The webhook and its secret', registeredWebhookSchema) },
            Refusals.tenant,
            Refusals.params,
            Refusals.body,
            [ErrorCode.WebhookUrlRefused],
          ),
        },
      },
      async (request) => register(sessionScope(request, callerNamespace(request)), request.body),
    )

    app.get(
      '/v1/sessions/:sessionId/webhook',
      {
        schema: {
          operationId: 'getSessionWebhook',
          tags,
          summary: "Read the session's webhook",
          description: "The session's own webhook (its URL; never its secret).",
          params: sessionParams,
          response: answers(
            { 200: answer("The session's webhook", webhookViewSchema) },
            Refusals.tenant,
            Refusals.params,
            [ErrorCode.WebhookNotFound],
          ),
        },
      },
      async (request) => read(sessionScope(request, callerNamespace(request))),
    )

    app.delete(
      '/v1/sessions/:sessionId/webhook',
      {
        schema: {
          operationId: 'removeSessionWebhook',
          tags,
          summary: "Remove the session's webhook",
          description:
            "Removes the session's webhook: its events go to the namespace's webhook, if any. " +
            'Deliveries still due to it are recorded `failed` (`unregistered`); a continuation one ' +
            'of them carried stays for a claim.',
          params: sessionParams,
          response: answers({ 204: noContent('Removed') }, Refusals.tenant, Refusals.params, [
            ErrorCode.WebhookNotFound,
          ]),
        },
      },
      async (request, reply) => {
        await remove(sessionScope(request, callerNamespace(request)))
        return reply.status(204).send()
      },
    )

    app.get(
      '/v1/webhook-deliveries',
      {
        schema: {
          operationId: 'listWebhookDeliveries',
          tags,
          summary: "List the namespace's webhook deliveries",
          description:
            "Deliveries newest first (a session's with `sessionId`, one state with `state`): each " +
            'with its stable `webhookId`, its tries, when the next is due, the last status and ' +
            'error. A delivery out of tries or age, or refused by the destination policy, is ' +
            '`failed`.',
          querystring: webhookDeliveryQuerySchema,
          response: answers(
            { 200: answer('The deliveries', webhookDeliveryListSchema) },
            Refusals.tenant,
            Refusals.query,
          ),
        },
      },
      async (request) => ({
        deliveries: await listWebhookDeliveries(deps.db, {
          namespaceId: callerNamespace(request),
          sessionId: request.query.sessionId,
          state: request.query.state,
          limit: request.query.limit,
        }),
      }),
    )

    const namespaceScope = (request: { params: { namespaceId: string } }) => ({
      namespaceId: request.params.namespaceId,
      sessionId: null,
    })

    app.put(
      '/v1/admin/namespaces/:namespaceId/webhook',
      {
        schema: {
          operationId: 'registerNamespaceWebhook',
          tags: adminTags,
          summary: "Register a namespace's webhook",
          description: `${REGISTER_DESCRIPTION} It takes the events of every session of the namespace that has no webhook of its own.`,
          security: adminSecurity,
          params: namespaceParams,
          body: registerWebhookRequestSchema,
          response: answers(
            { 200: answer('The webhook and its secret', registeredWebhookSchema) },
            Refusals.admin,
            Refusals.params,
            Refusals.body,
            [ErrorCode.NamespaceNotFound, ErrorCode.WebhookUrlRefused],
          ),
        },
      },
      async (request) => register(namespaceScope(request), request.body),
    )

    app.get(
      '/v1/admin/namespaces/:namespaceId/webhook',
      {
        schema: {
          operationId: 'getNamespaceWebhook',
          tags: adminTags,
          summary: "Read a namespace's webhook",
          description: "The namespace's webhook (its URL; never its secret).",
          security: adminSecurity,
          params: namespaceParams,
          response: answers(
            { 200: answer("The namespace's webhook", webhookViewSchema) },
            Refusals.admin,
            Refusals.params,
            [ErrorCode.WebhookNotFound],
          ),
        },
      },
      async (request) => read(namespaceScope(request)),
    )

    app.delete(
      '/v1/admin/namespaces/:namespaceId/webhook',
      {
        schema: {
          operationId: 'removeNamespaceWebhook',
          tags: adminTags,
          summary: "Remove a namespace's webhook",
          description:
            "Removes the namespace's webhook. Deliveries still due to it are recorded `failed` " +
            '(`unregistered`); a continuation one of them carried stays for a claim.',
          security: adminSecurity,
          params: namespaceParams,
          response: answers({ 204: noContent('Removed') }, Refusals.admin, Refusals.params, [
            ErrorCode.WebhookNotFound,
          ]),
        },
      },
      async (request, reply) => {
        await remove(namespaceScope(request))
        return reply.status(204).send()
      },
    )
  }
}

function webhookNotFound(scope: WebhookScope): BatonError {
  return new BatonError(
    ErrorCode.WebhookNotFound,
    scope.sessionId === null
      ? `namespace ${scope.namespaceId} has no webhook`
      : `session ${scope.sessionId} has no webhook`,
  )
}

function webhookView(w: WebhookRecord): WebhookView {
  return {
    url: w.url,
    sessionId: w.sessionId,
    createdAt: w.createdAt.toISOString(),
    updatedAt: w.updatedAt.toISOString(),
  }
}
