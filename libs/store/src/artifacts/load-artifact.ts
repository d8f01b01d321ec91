import { sql } from 'kysely'
import { resultDigest } from '@baton/contracts'
import type { Db } from '../db.ts'
import { TRANSIENT_READ_RETRY, retryTransient } from '../pg-errors.ts'

/** What the ledger keeps of an artifact whatever its state. */
export interface ArtifactRecord {
  readonly artifactId: string
  readonly attemptId: string
  /** The complete output's size in bytes. */
  readonly bytes: number
  /** `resultDigest` of the complete output. */
  readonly digest: string
  readonly expiresAt: Date
}

export type ArtifactLoad =
  /** No such artifact in this namespace (another namespace's answers the same). */
  | { readonly kind: 'missing' }
  /** Its retention deadline passed on the database clock: the content is, or is about to be, gone. */
  | { readonly kind: 'expired'; readonly artifact: ArtifactRecord }
  /** The stored content does not match its digest (or size): it must not be served. */
  | { readonly kind: 'corrupt'; readonly artifact: ArtifactRecord }
  /** The content, verified against its digest. */
  | { readonly kind: 'content'; readonly artifact: ArtifactRecord; readonly content: Buffer }

interface ArtifactRow {
  readonly id: string
  readonly attempt_id: string
  readonly bytes: string
  readonly digest: string
  readonly expires_at: Date
  readonly content: Buffer | null
}

/**
 * Loads an artifact of `namespaceId` and re-verifies its content against its digest. The content
 * is read only while it is unexpired at the database's `now()`. Idempotent read: retried once on
 * a fresh connection after a dead one.
 */
export async function loadArtifact(
  db: Db,
  namespaceId: string,
  artifactId: string,
): Promise<ArtifactLoad> {
  const result = await retryTransient(
    () =>
      sql<ArtifactRow>`
      select id, attempt_id, bytes, digest, expires_at,
             case when expired_at is null and expires_at > now() then content end as content
      from artifacts where id = ${artifactId} and namespace_id = ${namespaceId}
    `.execute(db),
    TRANSIENT_READ_RETRY,
  )
  const row = result.rows[0]
  if (row === undefined) return { kind: 'missing' }
  const artifact: ArtifactRecord = {
    artifactId: row.id,
    attemptId: row.attempt_id,
    bytes: Number(row.bytes),
    digest: row.digest,
    expiresAt: row.expires_at,
  }
  if (row.content === null) return { kind: 'expired', artifact }
  if (row.content.length !== artifact.bytes || resultDigest(row.content) !== artifact.digest) {
    return { kind: 'corrupt', artifact }
  }
  return { kind: 'content', artifact, content: row.content }
}
