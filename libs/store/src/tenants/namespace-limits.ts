import { sql } from 'kysely'
import type { StoredNamespaceLimits } from '@baton/contracts'
import type { Db } from '../db.ts'
import type { ResultPolicy } from '../artifacts/result-policy.ts'

interface LimitsRow {
  readonly artifact_quota_bytes: string | null
  readonly artifact_max_bytes: string | null
  readonly agent_history_max_bytes: string | null
  readonly ledger_retention_ms: string | null
}

/** The limits of the first row of `rows` (the one namespace a statement reads), if any. */
function limitsOf(rows: readonly LimitsRow[]): StoredNamespaceLimits | undefined {
  const [row] = rows
  if (row === undefined) return undefined
  const number = (value: string | null) => (value === null ? null : Number(value))
  return {
    artifactQuotaBytes: number(row.artifact_quota_bytes),
    artifactMaxBytes: number(row.artifact_max_bytes),
    agentHistoryMaxBytes: number(row.agent_history_max_bytes),
    ledgerRetentionMs: number(row.ledger_retention_ms),
  }
}

/** A namespace's stored limits (`null`: the default applies), or `undefined` for no namespace. */
export async function getNamespaceLimits(
  db: Db,
  namespaceId: string,
): Promise<StoredNamespaceLimits | undefined> {
  const result = await sql<LimitsRow>`
    select artifact_quota_bytes, artifact_max_bytes, agent_history_max_bytes, ledger_retention_ms
    from namespaces where id = ${namespaceId}
  `.execute(db)
  return limitsOf(result.rows)
}

/**
 * Replaces a namespace's stored limits (an absent or `null` one falls back to the processes'
 * default).
 * Every worker reads them in each artifact commit's transaction, so the next commit anywhere
 * enforces them; the retention binds every reconciler's next batch (`removeExpiredHistory`). Outcome: the limits as stored, or `undefined` for no namespace. Idempotent.
 */
export async function setNamespaceLimits(
  db: Db,
  namespaceId: string,
  limits: { readonly [K in keyof StoredNamespaceLimits]?: StoredNamespaceLimits[K] | undefined },
): Promise<StoredNamespaceLimits | undefined> {
  const result = await sql<LimitsRow>`
    update namespaces
    set artifact_quota_bytes = ${limits.artifactQuotaBytes ?? null},
        artifact_max_bytes = ${limits.artifactMaxBytes ?? null},
        agent_history_max_bytes = ${limits.agentHistoryMaxBytes ?? null},
        ledger_retention_ms = ${limits.ledgerRetentionMs ?? null}
    where id = ${namespaceId}
    returning artifact_quota_bytes, artifact_max_bytes, agent_history_max_bytes, ledger_retention_ms
  `.execute(db)
  return limitsOf(result.rows)
}

/**
 * The artifact limits in force for a namespace: the stored ones, the policy's defaults where none
 * is stored. Read inside a commit's transaction (one primary-key read), so a
 * limit set through the admin API binds every worker's next commit, whatever its environment.
 */
export async function artifactLimitsFor(
  db: Db,
  namespaceId: string,
  defaults: ArtifactLimits,
): Promise<ArtifactLimits> {
  return inForce(await getNamespaceLimits(db, namespaceId), defaults)
}

/**
 * `artifactLimitsFor` the namespace of an attempt (the defaults when there is no such attempt):
 * what a commit checks before staging content, so an output over the limit is never written.
 * The commit checks again in its transaction; that check decides.
 */
export async function artifactLimitsOfAttempt(
  db: Db,
  attemptId: string,
  defaults: ArtifactLimits,
): Promise<ArtifactLimits> {
  const result = await sql<LimitsRow>`
    select n.artifact_quota_bytes, n.artifact_max_bytes, n.agent_history_max_bytes,
           n.ledger_retention_ms
    from attempts a join namespaces n on n.id = a.namespace_id where a.id = ${attemptId}
  `.execute(db)
  return inForce(limitsOf(result.rows), defaults)
}

type ArtifactLimits = Pick<ResultPolicy, 'artifactMaxBytes' | 'namespaceMaxBytes'>

function inForce(
  stored: StoredNamespaceLimits | undefined,
  defaults: ArtifactLimits,
): ArtifactLimits {
  return {
    artifactMaxBytes: stored?.artifactMaxBytes ?? defaults.artifactMaxBytes,
    namespaceMaxBytes: stored?.artifactQuotaBytes ?? defaults.namespaceMaxBytes,
  }
}
