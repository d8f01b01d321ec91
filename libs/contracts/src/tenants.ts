import { z } from 'zod'
import { isoTimeSchema } from './delegation.ts'
import { ARTIFACT_MAX_BYTES_CEILING } from './namespace-limits.ts'
import { LEDGER_RETENTION_MS_MAX, LEDGER_RETENTION_MS_MIN } from './retention.ts'
import { storableText } from './storable-text.ts'

/**
 * Namespaces and API keys as the admin routes take and show them. A namespace id is a short
 * lowercase slug (it appears in logs and metrics labels); a key's name is free text for people.
 */
export const namespaceIdSchema = z
  .string()
  .regex(/^[a-z0-9][a-z0-9_-]{0,62}$/, 'lowercase letters, digits, "-" and "_" (at most 63)')

export const createNamespaceRequestSchema = z.strictObject({
  namespaceId: namespaceIdSchema,
  description: storableText().max(500).optional(),
})

export const issueApiKeyRequestSchema = z.strictObject({
  name: storableText().min(1).max(100),
})

export const namespaceViewSchema = z
  .object({
    namespaceId: z.string(),
    description: z.string().nullable(),
    createdAt: isoTimeSchema,
  })
  .meta({ id: 'NamespaceView' })
export type NamespaceView = z.infer<typeof namespaceViewSchema>

export const namespaceListSchema = z.object({ namespaces: z.array(namespaceViewSchema) })

const apiKeyFields = {
  keyId: z.uuid(),
  namespaceId: z.string(),
  name: z.string(),
  prefix: z.string(),
  createdAt: isoTimeSchema,
  revokedAt: isoTimeSchema.nullable(),
}

/** A key as listings show it: its prefix, never the key. */
export const apiKeyViewSchema = z.object(apiKeyFields).meta({ id: 'ApiKeyView' })
export type ApiKeyView = z.infer<typeof apiKeyViewSchema>

export const apiKeyListSchema = z.object({ keys: z.array(apiKeyViewSchema) })

/** A key as issued: the one answer that carries the key itself. */
export const issuedApiKeySchema = z
  .object({ ...apiKeyFields, key: z.string() })
  .meta({ id: 'IssuedApiKey' })
export type IssuedApiKeyView = z.infer<typeof issuedApiKeySchema>

const limitBytes = (max: number) => z.number().int().min(0).max(max).nullable()

/**
 * A namespace's limits as stored in the ledger: each a number of bytes (the retention: of
 * milliseconds), or `null` where the processes' defaults apply (`ARTIFACT_MAX_BYTES`,
 * `NAMESPACE_ARTIFACT_MAX_BYTES`, `AGENT_HISTORY_MAX_BYTES`, `LEDGER_RETENTION_MS`).
 */
export const namespaceLimitsSchema = z
  .strictObject({
    /** The most bytes of unexpired artifacts the namespace may hold. */
    artifactQuotaBytes: limitBytes(Number.MAX_SAFE_INTEGER),
    /** The largest artifact; at most what Baton can store and serve. */
    artifactMaxBytes: limitBytes(ARTIFACT_MAX_BYTES_CEILING),
    /** The most bytes of history (its events' JSON text) one agent of the namespace may hold. */
    agentHistoryMaxBytes: limitBytes(Number.MAX_SAFE_INTEGER),
    /** How long the ledger keeps the namespace's finished history before retention removes it. */
    ledgerRetentionMs: z
      .number()
      .int()
      .min(LEDGER_RETENTION_MS_MIN)
      .max(LEDGER_RETENTION_MS_MAX)
      .nullable(),
  })
  .meta({ id: 'NamespaceLimits' })
export type StoredNamespaceLimits = z.infer<typeof namespaceLimitsSchema>

/** `PUT …/limits` replaces them all: an absent limit is `null` (the default applies). */
export const setNamespaceLimitsRequestSchema = namespaceLimitsSchema.partial()

export const namespaceLimitsViewSchema = z
  .object({
    namespaceId: z.string(),
    /** As stored; `null` where the default applies. */
    limits: namespaceLimitsSchema,
    /** The defaults of this API process, which the workers must share. */
    defaults: z.object({
      artifactQuotaBytes: z.number(),
      artifactMaxBytes: z.number(),
      agentHistoryMaxBytes: z.number(),
      ledgerRetentionMs: z.number(),
    }),
  })
  .meta({ id: 'NamespaceLimitsView' })
export type NamespaceLimitsView = z.infer<typeof namespaceLimitsViewSchema>
