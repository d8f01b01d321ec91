import { sql } from 'kysely'
import { resultDigest } from '@baton/contracts'
import type { Db } from '../db.ts'
import { TRANSIENT_READ_RETRY, retryTransient } from '../pg-errors.ts'
import {
  STORED_ARTIFACT_TERMINAL_COLUMNS,
  type StoredArtifactTerminal,
} from '../attempts/terminal-record.ts'
import { bindsStoredFingerprint, loadArtifact, type ArtifactRecord } from './load-artifact.ts'

export type AttemptResultLoad =
  /** No such attempt in this namespace. */
  | { readonly kind: 'missing' }
  | { readonly kind: 'not_terminal' }
  /**
   * The complete output, inline or from its artifact (`artifactId`), verified against the digest
   * its terminal commit bound.
   */
  | {
      readonly kind: 'complete'
      readonly output: string
      readonly bytes: number
      readonly digest: string
      readonly artifactId: string | null
    }
  /** The artifact's retention ended: what remains is its summary (id, size, digest, deadline). */
  | { readonly kind: 'expired'; readonly artifact: ArtifactRecord }
  /**
   * What is stored no longer matches the digest the terminal commit bound (the inline output, or
   * the artifact's content or binding): it is not served.
   */
  | {
      readonly kind: 'corrupt'
      readonly artifactId: string | null
      readonly bytes: number
      readonly digest: string
    }
  /** An output recorded before artifacts existed, of which only the preview was kept. */
  | { readonly kind: 'unavailable'; readonly bytes: number; readonly preview: string }

/** An attempt's terminal columns and, when it has one, its artifact's binding (else nulls). */
interface ResultRow extends Nullable<StoredArtifactTerminal> {
  readonly id: string
  readonly status: string
  readonly fingerprint: string | null
  readonly attempt_artifact_id: string | null
}

type Nullable<T> = { readonly [K in keyof T]: T[K] | null }

/**
 * The complete results of terminal attempts of `namespaceId`, as a continuation carries them back
 * to their parent: each inline output, or its artifact's content — or, once retention deleted it,
 * the expiry summary. Verified against the digest the attempt's terminal commit bound: an inline
 * output against its stored digest, an artifact only after its binding rebuilds the attempt's
 * stored fingerprint (so neither the attempt's digest nor the artifact's own copy can have moved)
 * and then its content against that digest. Expiry is decided on the database clock
 * (`loadArtifact`). Idempotent read.
 */
export async function loadAttemptResults(
  db: Db,
  namespaceId: string,
  attemptIds: readonly string[],
): Promise<Map<string, AttemptResultLoad>> {
  if (attemptIds.length === 0) return new Map()
  const result = await retryTransient(
    () =>
      sql<ResultRow>`
        select ${STORED_ARTIFACT_TERMINAL_COLUMNS}, a.status, a.fingerprint,
               a.artifact_id as attempt_artifact_id
        from attempts a left join artifacts ar on ar.id = a.artifact_id
        where a.id = any(${[...attemptIds]}::uuid[]) and a.namespace_id = ${namespaceId}
      `.execute(db),
    TRANSIENT_READ_RETRY,
  )
  const loads = new Map<string, AttemptResultLoad>(
    attemptIds.map((id) => [id, { kind: 'missing' }]),
  )
  for (const row of result.rows) loads.set(row.id, await loadOne(db, namespaceId, row))
  return loads
}

/** `loadAttemptResults` of one attempt. */
export async function loadAttemptResult(
  db: Db,
  namespaceId: string,
  attemptId: string,
): Promise<AttemptResultLoad> {
  const loads = await loadAttemptResults(db, namespaceId, [attemptId])
  return loads.get(attemptId) ?? { kind: 'missing' }
}

async function loadOne(db: Db, namespaceId: string, row: ResultRow): Promise<AttemptResultLoad> {
  if (row.status !== 'terminal') return { kind: 'not_terminal' }
  const bytes = row.output_bytes ?? 0
  const digest = row.output_digest ?? ''
  const preview = row.output_preview ?? ''
  const artifactId = row.attempt_artifact_id
  if (artifactId === null) {
    if (row.output_truncated === true) return { kind: 'unavailable', bytes, preview }
    return resultDigest(preview) === digest
      ? { kind: 'complete', output: preview, bytes, digest, artifactId: null }
      : { kind: 'corrupt', artifactId: null, bytes, digest }
  }
  const corrupt = { kind: 'corrupt', artifactId, bytes, digest } as const
  if (!bindsStoredFingerprint(row)) return corrupt
  // `loadArtifact` checks the binding against the fingerprint again, in its own snapshot, and
  // the complete content against the digest it binds.
  const load = await loadArtifact(db, namespaceId, artifactId)
  switch (load.kind) {
    case 'content':
      return load.artifact.digest === digest && load.content.length === bytes
        ? { kind: 'complete', output: load.content.toString('utf8'), bytes, digest, artifactId }
        : corrupt
    case 'expired':
      return load
    case 'corrupt':
    case 'unsatisfiable':
      return corrupt
    case 'missing':
      throw new Error(`attempt ${row.id} binds artifact ${artifactId}, which is missing`)
    default: {
      const never: never = load
      throw new Error(`unexpected artifact load ${JSON.stringify(never)}`)
    }
  }
}
