import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod'
import { z } from 'zod'
import {
  BatonError,
  ErrorCode,
  apiKeyListSchema,
  apiKeyViewSchema,
  createNamespaceRequestSchema,
  issueApiKeyRequestSchema,
  issuedApiKeySchema,
  namespaceIdSchema,
  namespaceLimitsViewSchema,
  namespaceListSchema,
  namespaceViewSchema,
  setNamespaceLimitsRequestSchema,
  uuidSchema,
  type ApiKeyView,
  type NamespaceLimitsView,
  type NamespaceView,
  type StoredNamespaceLimits,
} from '@baton/contracts'
import {
  createNamespace,
  getNamespaceLimits,
  issueApiKey,
  listApiKeys,
  listNamespaces,
  revokeApiKey,
  setNamespaceLimits,
  type ApiKeyRecord,
  type NamespaceRecord,
} from '@baton/store'
import type { ApiDeps } from '../deps.ts'
import type { KeyResolver } from '../http/caller.ts'
import type { ApiTag } from '../http/openapi.ts'
import { Refusals, answer, answers } from '../http/route-answers.ts'

/** Every admin route is called with the admin key, never a namespace's. */
const security = [{ adminKey: [] }]
const tags: readonly ApiTag[] = ['Admin']

/**
 * Namespace and key management, behind the admin key (see http/caller.ts). A key is shown once,
 * in the answer that issues it; listings show its prefix. Revoking is idempotent and takes effect
 * at once on this API (other API processes stop trusting it within API_KEY_CACHE_MS).
 */
export function adminRoutes(deps: ApiDeps & { readonly keys: KeyResolver }): FastifyPluginAsyncZod {
  const log = deps.logger.child({ component: 'admin' })
  const limitsView = (namespaceId: string, limits: StoredNamespaceLimits): NamespaceLimitsView => ({
    namespaceId,
    limits,
    defaults: { ...deps.config.limitDefaults, ledgerRetentionMs: deps.config.ledgerRetentionMs },
  })
  const namespaceParams = z.strictObject({ namespaceId: namespaceIdSchema })
  return async (app) => {
    app.post(
      '/v1/admin/namespaces',
      {
        schema: {
          operationId: 'createNamespace',
          tags,
          summary: 'Create a namespace',
          description:
            'A namespace owns its sessions, agents, attempts, artifacts, runs and continuations; ' +
            "its API keys see nothing of another namespace's. Create it, then issue it a key.",
          security,
          body: createNamespaceRequestSchema,
          response: answers(
            { 201: answer('The namespace', namespaceViewSchema) },
            Refusals.admin,
            Refusals.body,
            [ErrorCode.NamespaceExists],
          ),
        },
      },
      async (request, reply) => {
        const created = await createNamespace(deps.db, {
          namespaceId: request.body.namespaceId,
          description: request.body.description ?? null,
        })
        if (created.kind === 'exists') {
          throw new BatonError(
            ErrorCode.NamespaceExists,
            `namespace ${request.body.namespaceId} exists`,
          )
        }
        log.info({ namespaceId: request.body.namespaceId }, 'namespace created')
        return reply.status(201).send(namespaceView(created.namespace))
      },
    )

    app.get(
      '/v1/admin/namespaces',
      {
        schema: {
          operationId: 'listNamespaces',
          tags,
          summary: 'List namespaces',
          description: 'Every namespace, with its description and when it was created.',
          security,
          response: answers(
            { 200: answer('Every namespace', namespaceListSchema) },
            Refusals.admin,
          ),
        },
      },
      async () => ({ namespaces: (await listNamespaces(deps.db)).map(namespaceView) }),
    )

    app.post(
      '/v1/admin/namespaces/:namespaceId/keys',
      {
        schema: {
          operationId: 'issueApiKey',
          tags,
          summary: 'Issue an API key',
          description:
            'Issues a new API key for the namespace: requests made with it act in the namespace. ' +
            'Baton keeps only its hash and prefix, so this answer is the only time the key is shown.',
          security,
          params: namespaceParams,
          body: issueApiKeyRequestSchema,
          response: answers(
            { 201: answer('The key: the only answer that shows it', issuedApiKeySchema) },
            Refusals.admin,
            Refusals.params,
            Refusals.body,
            [ErrorCode.NamespaceNotFound],
          ),
        },
      },
      async (request, reply) => {
        const { namespaceId } = request.params
        const issued = await issueApiKey(deps.db, { namespaceId, name: request.body.name })
        if (issued === undefined) throw namespaceNotFound(namespaceId)
        log.info({ namespaceId, keyId: issued.keyId, prefix: issued.prefix }, 'API key issued')
        return reply.status(201).send({ ...keyView(issued), key: issued.key })
      },
    )

    app.get(
      '/v1/admin/namespaces/:namespaceId/keys',
      {
        schema: {
          operationId: 'listApiKeys',
          tags,
          summary: "List a namespace's API keys",
          description:
            "The namespace's keys, revoked ones included, each by its id, name and prefix: a key " +
            'itself is never shown again after the answer that issued it.',
          security,
          params: namespaceParams,
          response: answers(
            { 200: answer("The namespace's keys (prefixes only)", apiKeyListSchema) },
            Refusals.admin,
            Refusals.params,
            [ErrorCode.NamespaceNotFound],
          ),
        },
      },
      async (request) => {
        const { namespaceId } = request.params
        const keys = await listApiKeys(deps.db, namespaceId)
        if (keys === undefined) throw namespaceNotFound(namespaceId)
        return { keys: keys.map(keyView) }
      },
    )

    app.get(
      '/v1/admin/namespaces/:namespaceId/limits',
      {
        schema: {
          operationId: 'getNamespaceLimits',
          tags,
          summary: "Read a namespace's limits",
          description:
            "The namespace's limits as stored in the ledger (`null` where the default applies) " +
            "and this API's defaults (`ARTIFACT_MAX_BYTES`, `NAMESPACE_ARTIFACT_MAX_BYTES`, " +
            '`AGENT_HISTORY_MAX_BYTES`, `LEDGER_RETENTION_MS`).',
          security,
          params: namespaceParams,
          response: answers(
            { 200: answer("The namespace's limits", namespaceLimitsViewSchema) },
            Refusals.admin,
            Refusals.params,
            [ErrorCode.NamespaceNotFound],
          ),
        },
      },
      async (request) => {
        const { namespaceId } = request.params
        const limits = await getNamespaceLimits(deps.db, namespaceId)
        if (limits === undefined) throw namespaceNotFound(namespaceId)
        return limitsView(namespaceId, limits)
      },
    )

    app.put(
      '/v1/admin/namespaces/:namespaceId/limits',
      {
        schema: {
          operationId: 'setNamespaceLimits',
          tags,
          summary: "Set a namespace's limits",
          description:
            "Replaces the namespace's limits, in bytes: `artifactQuotaBytes` (unexpired " +
            'artifacts together), `artifactMaxBytes` (one artifact, at most what Baton can ' +
            "store and serve), `agentHistoryMaxBytes` (one agent's history), and, in " +
            'milliseconds, `ledgerRetentionMs` (how long finished history is kept before ledger ' +
            'retention removes it: one minute to ten years). An absent or `null` limit falls ' +
            "back to the default. They are stored in the ledger; every worker's next commit " +
            "and every reconciler's next retention batch enforce them, whatever its own " +
            'environment. A value out of range is refused and nothing is written.',
          security,
          params: namespaceParams,
          body: setNamespaceLimitsRequestSchema,
          response: answers(
            { 200: answer("The namespace's limits, as stored", namespaceLimitsViewSchema) },
            Refusals.admin,
            Refusals.params,
            Refusals.body,
            [ErrorCode.NamespaceNotFound],
          ),
        },
      },
      async (request) => {
        const { namespaceId } = request.params
        const limits = await setNamespaceLimits(deps.db, namespaceId, request.body)
        if (limits === undefined) throw namespaceNotFound(namespaceId)
        log.info({ namespaceId, limits }, 'namespace limits set')
        return limitsView(namespaceId, limits)
      },
    )

    app.post(
      '/v1/admin/keys/:keyId/revoke',
      {
        schema: {
          operationId: 'revokeApiKey',
          tags,
          summary: 'Revoke an API key',
          description:
            'Revokes the key (a repeat answers the same). This API process stops trusting it at ' +
            'once, other API processes within `API_KEY_CACHE_MS`.',
          security,
          params: z.strictObject({ keyId: uuidSchema }),
          response: answers(
            { 200: answer('The key, revoked (idempotent)', apiKeyViewSchema) },
            Refusals.admin,
            Refusals.params,
            [ErrorCode.ApiKeyNotFound],
          ),
        },
      },
      async (request) => {
        const { keyId } = request.params
        const revoked = await revokeApiKey(deps.db, keyId)
        if (revoked === undefined)
          throw new BatonError(ErrorCode.ApiKeyNotFound, `no API key ${keyId}`)
        deps.keys.forget(keyId)
        log.info(
          { namespaceId: revoked.namespaceId, keyId, prefix: revoked.prefix },
          'API key revoked',
        )
        return keyView(revoked)
      },
    )
  }
}

function namespaceNotFound(namespaceId: string): BatonError {
  return new BatonError(ErrorCode.NamespaceNotFound, `no namespace ${namespaceId}`)
}

function namespaceView(n: NamespaceRecord): NamespaceView {
  return {
    namespaceId: n.namespaceId,
    description: n.description,
    createdAt: n.createdAt.toISOString(),
  }
}

function keyView(k: ApiKeyRecord): ApiKeyView {
  return {
    keyId: k.keyId,
    namespaceId: k.namespaceId,
    name: k.name,
    prefix: k.prefix,
    createdAt: k.createdAt.toISOString(),
    revokedAt: k.revokedAt?.toISOString() ?? null,
  }
}
