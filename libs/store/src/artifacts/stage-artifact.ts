import { randomUUID } from 'node:crypto'
import { sql } from 'kysely'
import { ARTIFACT_CHUNK_BYTES, chunkDigest } from '@baton/contracts'
import type { Db } from '../db.ts'

/** Content written ahead of its terminal commit: what the commit binds (see `commitTerminals`). */
export interface StagedArtifact {
  readonly uploadId: string
  readonly attemptId: string
  /** The attempt's session: the distribution key of the upload's rows. */
  readonly sessionId: string
  readonly bytes: number
  /** `resultDigest` of the complete content, computed once by the caller before staging. */
  readonly digest: string
}

/**
 * How long an upload may wait for the commit that binds it before expiry collects it as an
 * orphan (`expireArtifacts`). A commit whose upload was collected stages it again, so this bounds
 * the garbage, not correctness.
 */
export const UPLOAD_GRACE_MS = 15 * 60 * 1000

/**
 * Writes an attempt's complete output ahead of its terminal commit: an upload row, then one
 * chunk (`ARTIFACT_CHUNK_BYTES`, with its `chunkDigest`) per statement, each its own short
 * transaction, under no lock another writer waits on. The content is sent as a binary parameter,
 * never encoded. Inputs: the attempt, the content and its `resultDigest`. Outcome: the upload the
 * commit binds (undefined, with nothing written, when the attempt does not exist); nothing is
 * counted in any quota until a commit binds it. Retry safety: each call
 * writes a fresh upload; one no commit binds is deleted (`discardUpload`, or expiry after
 * `UPLOAD_GRACE_MS`).
 */
export async function stageArtifact(
  db: Db,
  input: { readonly attemptId: string; readonly content: Buffer; readonly digest: string },
): Promise<StagedArtifact | undefined> {
  const uploadId = randomUUID()
  const { content } = input
  const chunks = Math.ceil(content.length / ARTIFACT_CHUNK_BYTES)
  const upload = await sql<{ session_id: string }>`
    insert into artifact_uploads (id, session_id, attempt_id, bytes, digest, chunks)
    select ${uploadId}, a.session_id, a.id, ${content.length}, ${input.digest}, ${chunks}
    from attempts a where a.id = ${input.attemptId}
    returning session_id
  `.execute(db)
  const sessionId = upload.rows[0]?.session_id
  if (sessionId === undefined) return undefined
  try {
    for (let seq = 0; seq < chunks; seq += 1) {
      const chunk = content.subarray(seq * ARTIFACT_CHUNK_BYTES, (seq + 1) * ARTIFACT_CHUNK_BYTES)
      await sql`
        insert into artifact_chunks (upload_id, session_id, seq, content, digest)
        values (${uploadId}, ${sessionId}, ${seq}, ${chunk}, ${chunkDigest(seq, chunk)})
      `.execute(db)
    }
  } catch (error) {
    // Best effort: expiry collects whatever this leaves.
    await discardUpload(db, { uploadId, sessionId }).catch(() => undefined)
    throw error
  }
  return {
    uploadId,
    attemptId: input.attemptId,
    sessionId,
    bytes: content.length,
    digest: input.digest,
  }
}

/**
 * Deletes an upload no commit bound (refused, replayed, stale) with its chunks, in one
 * transaction. An upload already bound (its row deleted by the commit) is left alone. Idempotent.
 */
export async function discardUpload(
  db: Db,
  upload: Pick<StagedArtifact, 'uploadId' | 'sessionId'>,
): Promise<void> {
  const { uploadId, sessionId } = upload
  await db.transaction().execute(async (trx) => {
    const gone = await sql`
      delete from artifact_uploads where id = ${uploadId} and session_id = ${sessionId} returning id
    `.execute(trx)
    if (gone.rows.length === 0) return
    await sql`
      delete from artifact_chunks where upload_id = ${uploadId} and session_id = ${sessionId}
    `.execute(trx)
  })
}

/**
 * Deletes uploads older than `UPLOAD_GRACE_MS` (database clock) that no commit bound, with their
 * chunks: what a worker that crashed between staging and committing left. Taken with `SKIP
 * LOCKED` (a commit binding one holds it), oldest first. Outcome: how many. Retry safety: a
 * repeat finds nothing twice.
 */
export async function collectOrphanUploads(
  trx: Db,
  input: { readonly limit: number; readonly graceMs?: number },
): Promise<number> {
  const gone = await sql<{ id: string }>`
    delete from artifact_uploads where id in (
      select id from artifact_uploads
      where created_at < now() - ${input.graceMs ?? UPLOAD_GRACE_MS} * interval '1 millisecond'
      order by created_at limit ${input.limit}
      for update skip locked
    )
    returning id
  `.execute(trx)
  if (gone.rows.length === 0) return 0
  await sql`
    delete from artifact_chunks where upload_id = any(${gone.rows.map((r) => r.id)}::uuid[])
  `.execute(trx)
  return gone.rows.length
}
