import { z } from 'zod'

const MIB = 1024 * 1024

/**
 * The largest artifact Baton can store and serve, in bytes. Content is stored in chunks
 * (`ARTIFACT_CHUNK_BYTES` each), so no single Postgres value holds it whole; what bounds it is the
 * complete read: a full read and a continuation's delivery hand the content on as one UTF-8
 * string, and a Node string holds at most 2^29 - 24 UTF-16 units (V8's limit on 64-bit). That is
 * also below what one `bytea` value could be read back as (its hex text output, 2n + 3 bytes,
 * must stay under Postgres's 1 GB allocation limit), so content stored whole before chunking
 * stays readable too.
 */
export const ARTIFACT_MAX_BYTES_CEILING = 2 ** 29 - 24

/** The size of one stored chunk of an artifact's content (the last one may be shorter). */
export const ARTIFACT_CHUNK_BYTES = MIB

const bytes = (fallback: number, max: number, name: string) =>
  z.coerce
    .number()
    .int()
    .min(0)
    .max(max, {
      message: `${name} is at most ${max} bytes (the largest Baton can store and serve)`,
    })
    .default(fallback)

/**
 * The defaults of a namespace's limits, the same settings in the API (which reports them) and the
 * worker (which enforces them): each app spreads this shape into its config schema. A limit stored
 * for a namespace in the ledger (the admin API's `PUT /v1/admin/namespaces/:namespaceId/limits`)
 * takes precedence over these.
 */
export const namespaceLimitsEnvShape = {
  /** The largest artifact; a larger output ends `error` / `quota_exceeded`. */
  ARTIFACT_MAX_BYTES: bytes(64 * MIB, ARTIFACT_MAX_BYTES_CEILING, 'ARTIFACT_MAX_BYTES'),
  /** The most bytes of unexpired artifacts one namespace may hold. */
  NAMESPACE_ARTIFACT_MAX_BYTES: z.coerce
    .number()
    .int()
    .min(0)
    .max(Number.MAX_SAFE_INTEGER)
    .default(1024 * MIB),
  /** The most bytes of history (its events' JSON text) one agent may hold. */
  AGENT_HISTORY_MAX_BYTES: z.coerce
    .number()
    .int()
    .min(0)
    .max(Number.MAX_SAFE_INTEGER)
    .default(64 * MIB),
}

export type NamespaceLimitsEnv = z.infer<z.ZodObject<typeof namespaceLimitsEnvShape>>

/** A namespace's limits: stored in the ledger, or a process's defaults where none is stored. */
export interface NamespaceLimits {
  /** The most bytes of unexpired artifacts the namespace may hold. */
  readonly artifactQuotaBytes: number
  /** The largest artifact. */
  readonly artifactMaxBytes: number
  /** The most bytes of history (its events' JSON text) one agent may hold. */
  readonly agentHistoryMaxBytes: number
}

export function namespaceLimitDefaults(env: NamespaceLimitsEnv): NamespaceLimits {
  return Object.freeze({
    artifactQuotaBytes: env.NAMESPACE_ARTIFACT_MAX_BYTES,
    artifactMaxBytes: env.ARTIFACT_MAX_BYTES,
    agentHistoryMaxBytes: env.AGENT_HISTORY_MAX_BYTES,
  })
}
