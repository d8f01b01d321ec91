import { sql } from 'kysely'
import { chunkDigest, resultDigestOfParts, terminalFingerprint } from '@baton/contracts'
import type { Db } from '../db.ts'
import { TRANSIENT_READ_RETRY, retryTransient } from '../pg-errors.ts'
import {
  STORED_ARTIFACT_TERMINAL_COLUMNS,
  storedArtifactProjection,
  type StoredArtifactTerminal,
} from '../attempts/terminal-record.ts'

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

/** An inclusive byte range of an artifact's content. */
export interface ByteRange {
  readonly start: number
  readonly end: number
}

/**
 * Which part of the content a read wants, once its size is known: a range, `unsatisfiable` (no
 * byte of it exists), or `undefined` for the complete content.
 */
export type RangeChoice = (bytes: number) => ByteRange | 'unsatisfiable' | undefined

export type ArtifactLoad =
  /** No such artifact in this namespace (another namespace's answers the same). */
  | { readonly kind: 'missing' }
  /** Its retention deadline passed on the database clock: the content is, or is about to be, gone. */
  | { readonly kind: 'expired'; readonly artifact: ArtifactRecord }
  /**
   * What is stored does not match the digests it must (its chunks', the complete content's, or
   * its binding differs from what the attempt's terminal fingerprint bound): it must not be served.
   */
  | { readonly kind: 'corrupt'; readonly artifact: ArtifactRecord }
  /** The range asked for holds no byte of the content. */
  | { readonly kind: 'unsatisfiable'; readonly artifact: ArtifactRecord }
  /**
   * The content, verified: complete (`range` absent) against the complete-content digest, or the
   * bytes of `range` from the chunks covering it, each against its chunk digest.
   */
  | {
      readonly kind: 'content'
      readonly artifact: ArtifactRecord
      readonly content: Buffer
      readonly range?: ByteRange
    }

interface ArtifactRow extends Nullable<StoredArtifactTerminal> {
  readonly artifact_id: string
  readonly attempt_id: string
  readonly bytes: string
  readonly digest: string
  readonly expires_at: Date
  readonly live: boolean
  readonly upload_id: string | null
  readonly chunk_bytes: number | null
  readonly fingerprint: string | null
}

type Nullable<T> = { readonly [K in keyof T]: T[K] | null }

interface ChunkRow {
  readonly seq: number
  readonly content: Buffer
  readonly digest: string
}

/**
 * Loads an artifact of `namespaceId`, or the range of it `range` chooses, verified:
 * - its binding (id, size, digest, retention) must rebuild the fingerprint its attempt's terminal
 *   commit stored, so the digest the content is checked against is the one the commit bound, not
 *   only the artifact row's own copy;
 * - a complete read checks every chunk and the complete content against that digest;
 * - a range read reads only the chunks covering the range and checks each against its chunk
 *   digest (`chunkDigest`): a one-byte read of a large artifact reads one chunk.
 * The content is read only while it is unexpired at the database's `now()`; the row and its
 * chunks are read in one snapshot, so expiry between them cannot pass for corruption.
 * Idempotent read: retried once on a fresh connection after a dead one.
 */
export async function loadArtifact(
  db: Db,
  namespaceId: string,
  artifactId: string,
  range?: RangeChoice,
): Promise<ArtifactLoad> {
  // Inside a caller's transaction, its snapshot is the one.
  if (db.isTransaction) return loadIn(db, namespaceId, artifactId, range)
  return retryTransient(
    () =>
      db
        .transaction()
        .setIsolationLevel('repeatable read')
        .setAccessMode('read only')
        .execute((trx) => loadIn(trx, namespaceId, artifactId, range)),
    TRANSIENT_READ_RETRY,
  )
}

async function loadIn(
  trx: Db,
  namespaceId: string,
  artifactId: string,
  range: RangeChoice | undefined,
): Promise<ArtifactLoad> {
  const result = await sql<ArtifactRow>`
    select ${STORED_ARTIFACT_TERMINAL_COLUMNS}, ar.attempt_id, ar.bytes, ar.digest, ar.expires_at,
           ar.upload_id, ar.chunk_bytes, a.fingerprint,
           (ar.expired_at is null and ar.expires_at > now()) as live
    from artifacts ar left join attempts a on a.id = ar.attempt_id
    where ar.id = ${artifactId} and ar.namespace_id = ${namespaceId}
  `.execute(trx)
  const row = result.rows[0]
  if (row === undefined) return { kind: 'missing' }
  const artifact: ArtifactRecord = {
    artifactId: row.artifact_id,
    attemptId: row.attempt_id,
    bytes: Number(row.bytes),
    digest: row.digest,
    expiresAt: row.expires_at,
  }
  if (!row.live || row.upload_id === null || row.chunk_bytes === null) {
    return { kind: 'expired', artifact }
  }
  if (!bindsStoredFingerprint(row)) return { kind: 'corrupt', artifact }
  const wanted = range?.(artifact.bytes)
  if (wanted === 'unsatisfiable') return { kind: 'unsatisfiable', artifact }
  const chunkBytes = row.chunk_bytes
  const first = wanted === undefined ? 0 : Math.floor(wanted.start / chunkBytes)
  const last =
    wanted === undefined
      ? Math.ceil(artifact.bytes / chunkBytes) - 1
      : Math.floor(wanted.end / chunkBytes)
  const chunks = await readChunks(trx, row.upload_id, first, last)
  if (chunks === undefined || !sizesMatch(chunks, first, last, chunkBytes, artifact.bytes)) {
    return { kind: 'corrupt', artifact }
  }
  if (wanted === undefined) {
    if (resultDigestOfParts(chunks) !== artifact.digest) return { kind: 'corrupt', artifact }
    return { kind: 'content', artifact, content: Buffer.concat(chunks) }
  }
  const covered = Buffer.concat(chunks)
  const offset = wanted.start - first * chunkBytes
  return {
    kind: 'content',
    artifact,
    content: covered.subarray(offset, offset + wanted.end - wanted.start + 1),
    range: wanted,
  }
}

/**
 * The complete content of an artifact whatever its deadline (each chunk checked against its
 * digest; the caller checks the complete digest), or `undefined` when any is missing or wrong.
 * For expiry's fingerprint backfill, which must see content that is due but not yet deleted.
 */
export async function readArtifactContent(
  trx: Db,
  artifactId: string,
): Promise<Buffer | undefined> {
  const result = await sql<{ upload_id: string | null; chunk_bytes: number | null; bytes: string }>`
    select upload_id, chunk_bytes, bytes from artifacts where id = ${artifactId}
  `.execute(trx)
  const row = result.rows[0]
  if (row === undefined || row.upload_id === null || row.chunk_bytes === null) return undefined
  const bytes = Number(row.bytes)
  const last = Math.ceil(bytes / row.chunk_bytes) - 1
  const chunks = await readChunks(trx, row.upload_id, 0, last)
  if (chunks === undefined || !sizesMatch(chunks, 0, last, row.chunk_bytes, bytes)) return undefined
  return Buffer.concat(chunks)
}

/**
 * Chunks `first`..`last` of an upload, in order, each checked against its `chunkDigest`; read by
 * the primary key `(upload_id, seq)`. `undefined` when one is missing or does not match.
 */
async function readChunks(
  trx: Db,
  uploadId: string,
  first: number,
  last: number,
): Promise<Buffer[] | undefined> {
  if (last < first) return []
  const result = await sql<ChunkRow>`
    select seq, content, digest from artifact_chunks
    where upload_id = ${uploadId} and seq between ${first} and ${last}
    order by seq
  `.execute(trx)
  if (result.rows.length !== last - first + 1) return undefined
  const intact = result.rows.every(
    (c, i) => c.seq === first + i && chunkDigest(c.seq, c.content) === c.digest,
  )
  return intact ? result.rows.map((c) => c.content) : undefined
}

/** Whether chunks `first`..`last` have the sizes an artifact of `bytes` cut in `chunkBytes` has. */
function sizesMatch(
  chunks: readonly Buffer[],
  first: number,
  last: number,
  chunkBytes: number,
  bytes: number,
): boolean {
  return chunks.every((chunk, i) => {
    const seq = first + i
    const expected = seq === last ? bytes - seq * chunkBytes : chunkBytes
    return seq <= last && chunk.length === Math.min(chunkBytes, expected)
  })
}

/**
 * Whether the attempt's stored fingerprint is the one its terminal columns and this artifact's
 * binding make: the one check that the digest content is verified against is the one the commit
 * bound.
 */
export function bindsStoredFingerprint(
  row: Nullable<StoredArtifactTerminal> & { readonly fingerprint: string | null },
): boolean {
  if (Object.entries(row).some(([k, v]) => v === null && REQUIRED.has(k))) return false
  const stored = row as StoredArtifactTerminal & { readonly fingerprint: string }
  return terminalFingerprint(storedArtifactProjection(stored)) === stored.fingerprint
}

/** What a projection with an artifact cannot be rebuilt without. */
const REQUIRED: ReadonlySet<string> = new Set([
  'fingerprint',
  'owner_generation',
  'stop_reason',
  'output_preview',
  'output_truncated',
  'output_bytes',
  'output_digest',
  'artifact_id',
  'artifact_bytes',
  'artifact_digest',
  'retention_ms',
])
