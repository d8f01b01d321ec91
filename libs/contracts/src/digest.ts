import { createHash } from 'node:crypto'

/**
 * Versioned, domain-separated SHA-256 digests. Every layer that names a result or a terminal
 * projection uses these helpers, so a digest computed by a worker, the reconciler or a reader of
 * the ledger is always comparable. Changing a domain string or the canonical form is a new version.
 */
const RESULT_DOMAIN = 'baton.result.v1'
const TERMINAL_DOMAIN = 'baton.terminal.v1'
const REQUEST_DOMAIN = 'baton.request.v1'
const CONTEXT_DOMAIN = 'baton.context.v1'
const CONTINUATION_DOMAIN = 'baton.continuation.v1'
const CHUNK_DOMAIN = 'baton.chunk.v1'

function domainDigest(domain: string, payload: string | Uint8Array): string {
  const hash = createHash('sha256')
  hash.update(domain)
  hash.update('\0')
  hash.update(payload)
  return `${domain}:sha256:${hash.digest('hex')}`
}

/**
 * Digest of a result's complete output, before any truncation: over its UTF-8 bytes (a string is
 * encoded as UTF-8, lone surrogates as U+FFFD, exactly as the ledger stores it). Definition:
 * `baton.result.v1:sha256:` + hex SHA-256 of `baton.result.v1`, one 0x00 byte, then the bytes.
 */
export function resultDigest(output: string | Uint8Array): string {
  return domainDigest(RESULT_DOMAIN, output)
}

/**
 * `resultDigest` of content read in parts (an artifact's chunks, in order): the same digest as
 * over their concatenation, without holding it whole.
 */
export function resultDigestOfParts(parts: Iterable<Uint8Array>): string {
  const hash = createHash('sha256')
  hash.update(RESULT_DOMAIN)
  hash.update('\0')
  for (const part of parts) hash.update(part)
  return `${RESULT_DOMAIN}:sha256:${hash.digest('hex')}`
}

/**
 * Digest of one stored chunk of an artifact's content: over its position and bytes, so a chunk
 * read alone (a range read) is verified without the rest, and a chunk moved to another position
 * fails. Definition: `baton.chunk.v1:sha256:` + hex SHA-256 of `baton.chunk.v1`, 0x00, the
 * position in decimal, 0x00, then the bytes (migration 0020 computes it the same way in SQL).
 */
export function chunkDigest(seq: number, bytes: Uint8Array): string {
  const hash = createHash('sha256')
  hash.update(CHUNK_DOMAIN)
  hash.update('\0')
  hash.update(`${seq}\0`)
  hash.update(bytes)
  return `${CHUNK_DOMAIN}:sha256:${hash.digest('hex')}`
}

/**
 * Canonical JSON: object keys sorted, no whitespace, `undefined` members dropped. Only plain JSON
 * values are accepted; anything else is a programming error.
 */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value === 'boolean' || typeof value === 'string') {
    return JSON.stringify(value)
  }
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new TypeError('canonicalJson: non-finite number')
    return JSON.stringify(value)
  }
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`
  if (typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`
  }
  throw new TypeError(`canonicalJson: unsupported value of type ${typeof value}`)
}

/**
 * The immutable terminal projection of an attempt: everything a terminal commit decides. Its
 * fingerprint makes a retried commit recognisable (`replayed`) and any different one refusable.
 * Database timestamps are not part of it: a retry after a lost response cannot know them.
 */
export interface TerminalProjection {
  readonly attemptId: string
  readonly ownerGeneration: number
  readonly stopReason: string
  readonly outputPreview: string
  readonly outputTruncated: boolean
  readonly outputBytes: number
  readonly outputDigest: string
  readonly failureCategory: string | null
  /** The delegation's `metadata.traceId`; absent when it has none. */
  readonly traceId?: string
  /** Where the complete output lives when it is not inline; absent for an inline result. */
  readonly artifact?: ArtifactBinding
  /**
   * The context delta the commit appends to its agent's history; absent when it appends none (so
   * fingerprints of commits without a delta are unchanged by this field's existence).
   */
  readonly context?: HistoryDeltaBinding
  /**
   * For a terminal that refused to store an output over an artifact limit (`quota_exceeded`):
   * the size and digest of the output it refused, so only a retry of that same output is its
   * exact replay. Absent otherwise.
   */
  readonly refusedOutput?: { readonly bytes: number; readonly digest: string }
}

/**
 * What a terminal commit binds of its artifact: its id, the output's byte size and digest, and
 * the initial retention projection (how long after the commit, on the database clock, the content
 * is kept).
 */
export interface ArtifactBinding {
  readonly artifactId: string
  readonly bytes: number
  readonly digest: string
  readonly retentionMs: number
}

/** What a terminal commit binds of the history it appends: where it starts, its size, its digest. */
export interface HistoryDeltaBinding {
  /** The agent's history length the delta continues from (its first event's `seq`). */
  readonly baseSeq: number
  readonly eventCount: number
  readonly digest: string
}

export function terminalFingerprint(projection: TerminalProjection): string {
  return domainDigest(TERMINAL_DOMAIN, canonicalJson(projection))
}

/** Digest of a context delta: the canonical JSON of its events, in order. */
export function historyDigest(events: readonly unknown[]): string {
  return domainDigest(CONTEXT_DOMAIN, canonicalJson(events))
}

/** Digest of what a delegation request asks for, to recognise an idempotent retry. */
export function requestDigest(request: unknown): string {
  return domainDigest(REQUEST_DOMAIN, canonicalJson(request))
}

/**
 * Digest of a continuation's canonical durable input (RFC 8785 JSON text, hashed as its UTF-8
 * bytes). The ledger derives the input and computes this digest itself (migration 0007); a host
 * that receives the input verifies the receipt's `inputDigest` with this.
 */
export function continuationDigest(canonicalInput: string): string {
  return domainDigest(CONTINUATION_DOMAIN, canonicalInput)
}
