import type { Db } from '../db.ts'
import { TRANSIENT_READ_RETRY, retryTransient } from '../pg-errors.ts'
import { loadArtifact, type ArtifactRecord } from './load-artifact.ts'

export type AttemptResultLoad =
  /** No such attempt in this namespace. */
  | { readonly kind: 'missing' }
  | { readonly kind: 'not_terminal' }
  /** The complete output, inline or from its verified artifact, and its size and digest. */
  | {
      readonly kind: 'complete'
      readonly output: string
      readonly bytes: number
      readonly digest: string
    }
  /** The artifact's content is gone: what remains is its summary (id, size, digest, deadline). */
  | { readonly kind: 'expired'; readonly artifact: ArtifactRecord }
  /** The artifact's content does not match its digest. */
  | { readonly kind: 'corrupt'; readonly artifact: ArtifactRecord }

/**
 * The complete result of a terminal attempt of `namespaceId`: the inline output, or its
 * artifact's content verified against the digest — or, once retention deleted that, the expiry
 * summary. What a continuation carries back to its parent. Idempotent read.
 */
export async function loadAttemptResult(
  db: Db,
  namespaceId: string,
  attemptId: string,
): Promise<AttemptResultLoad> {
  const row = await retryTransient(
    () =>
      db
        .selectFrom('attempts')
        .select(['status', 'output_preview', 'output_bytes', 'output_digest', 'artifact_id'])
        .where('id', '=', attemptId)
        .where('namespace_id', '=', namespaceId)
        .executeTakeFirst(),
    TRANSIENT_READ_RETRY,
  )
  if (row === undefined) return { kind: 'missing' }
  if (row.status !== 'terminal') return { kind: 'not_terminal' }
  const bytes = row.output_bytes ?? 0
  const digest = row.output_digest ?? ''
  if (row.artifact_id === null)
    return { kind: 'complete', output: row.output_preview ?? '', bytes, digest }
  const load = await loadArtifact(db, namespaceId, row.artifact_id)
  switch (load.kind) {
    case 'content':
      return { kind: 'complete', output: load.content.toString('utf8'), bytes, digest }
    case 'expired':
    case 'corrupt':
      return load
    case 'missing':
      throw new Error(`attempt ${attemptId} binds artifact ${row.artifact_id}, which is missing`)
    default: {
      const never: never = load
      throw new Error(`unexpected artifact load ${JSON.stringify(never)}`)
    }
  }
}
