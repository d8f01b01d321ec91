import { createHash } from 'node:crypto'
import { sql, type RawBuilder } from 'kysely'
import {
  FailureCategory,
  historyDigest,
  resultDigest,
  terminalFingerprint,
  type TerminalProjection,
} from '@baton/contracts'
import { DEFAULT_RESULT_POLICY } from '../artifacts/result-policy.ts'
import { inlinePreview, needsArtifact, storedOutput } from './result-text.ts'
import { wellFormedJson } from './stored-json.ts'

export interface TerminalResultInput {
  readonly stopReason: string
  readonly output: string
  readonly failureCategory: FailureCategory | null
  /** History the child added, appended to its agent's history by the same commit. */
  readonly history?: HistoryDelta
  /**
   * Tokens the child's model calls spent. Stored by the commit that applies, outside the
   * projection: a replay applies nothing, so an attempt's tokens are counted once.
   */
  readonly usageTokens?: number | undefined
}

/**
 * A validated suffix of an agent's history: the JSON events a child added after the history it
 * was resumed from, numbered from `baseSeq` (that history's length).
 */
export interface HistoryDelta {
  readonly baseSeq: number
  readonly events: readonly unknown[]
}

/** What shapes a projection besides the result: the bounds in force and the delegation's trace. */
export interface ProjectionOptions {
  readonly inlineBytes?: number
  readonly retentionMs?: number
  readonly traceId?: string | undefined
  /** The output a `quota_exceeded` terminal refused (see `TerminalProjection.refusedOutput`). */
  readonly refusedOutput?: { readonly bytes: number; readonly digest: string } | undefined
}

export interface BuiltTerminal {
  readonly projection: TerminalProjection
  readonly fingerprint: string
  /** The complete output's UTF-8 bytes when an artifact must hold them (see `needsArtifact`). */
  readonly content: Buffer | undefined
  /** The history events as digested: well-formed, ready for `toStoredJson`. */
  readonly events: readonly unknown[]
}

/**
 * Derives the immutable terminal projection (bounded preview, full-output byte size and digest,
 * artifact binding, safe failure category, trace id) and its fingerprint. Used by every path that
 * makes an attempt terminal, so a worker's commit, a cancel and a process-loss synthesis follow
 * the same rules.
 */
export function buildTerminalProjection(
  attemptId: string,
  ownerGeneration: number,
  result: TerminalResultInput,
  options: ProjectionOptions = {},
): BuiltTerminal {
  const inlineBytes = options.inlineBytes ?? DEFAULT_RESULT_POLICY.inlineBytes
  const output = storedOutput(result.output)
  const outputBytes = Buffer.byteLength(output, 'utf8')
  const content = needsArtifact(output, outputBytes, inlineBytes)
    ? Buffer.from(output, 'utf8')
    : undefined
  const outputDigest = resultDigest(content ?? output)
  const events = (result.history?.events ?? []).map(wellFormedJson)
  const projection: TerminalProjection = {
    attemptId,
    ownerGeneration,
    stopReason: result.stopReason,
    outputPreview: content === undefined ? output : inlinePreview(output, inlineBytes),
    outputTruncated: content !== undefined,
    outputBytes,
    outputDigest,
    failureCategory: result.failureCategory,
    ...(options.traceId === undefined ? {} : { traceId: options.traceId }),
    ...(options.refusedOutput === undefined ? {} : { refusedOutput: options.refusedOutput }),
    ...(content === undefined
      ? {}
      : {
          artifact: {
            artifactId: artifactIdFor(attemptId),
            bytes: outputBytes,
            digest: outputDigest,
            retentionMs: options.retentionMs ?? DEFAULT_RESULT_POLICY.retentionMs,
          },
        }),
    ...(result.history === undefined || events.length === 0
      ? {}
      : {
          // `context` is the fingerprint's field name since migration 0004: renaming it would
          // change every stored fingerprint and turn exact replays into refusals.
          context: {
            baseSeq: result.history.baseSeq,
            eventCount: events.length,
            digest: historyDigest(events),
          },
        }),
  }
  return { projection, fingerprint: terminalFingerprint(projection), content, events }
}

/**
 * Whether a result's output goes into an artifact under the inline bound `inlineBytes` (as
 * `buildTerminalProjection` decides it): its commit stages content and runs a transaction of its
 * own, so a worker commits it apart from its batch of inline results.
 */
export function resultNeedsArtifact(result: TerminalResultInput, inlineBytes: number): boolean {
  const output = storedOutput(result.output)
  return needsArtifact(output, Buffer.byteLength(output, 'utf8'), inlineBytes)
}

/**
 * The artifact id of an attempt's output: derived from the attempt id, so a retried commit binds
 * the same id (and so has the same fingerprint) without having seen the first one's answer.
 */
export function artifactIdFor(attemptId: string): string {
  const hash = createHash('sha256').update(`baton.artifact.v1\0${attemptId}`).digest()
  // Shaped as an RFC 9562 version 8 (custom) UUID: version and variant bits set.
  hash[6] = ((hash[6] ?? 0) & 0x0f) | 0x80
  hash[8] = ((hash[8] ?? 0) & 0x3f) | 0x80
  const hex = hash.subarray(0, 16).toString('hex')
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`
}

/**
 * The result a commit over quota records instead: nothing of the output or its history is kept.
 * Its projection binds the refused output's size and digest (`refusedOutput`).
 */
export function quotaExceededResult(usageTokens?: number): TerminalResultInput {
  return {
    stopReason: 'error',
    output: '',
    failureCategory: FailureCategory.QuotaExceeded,
    usageTokens,
  }
}

/**
 * The terminal columns of an attempt whose output is in an artifact, with that artifact's binding
 * as stored: what `storedArtifactProjection` rebuilds its projection from.
 */
export interface StoredArtifactTerminal {
  readonly id: string
  readonly owner_generation: number
  readonly stop_reason: string
  readonly output_preview: string
  readonly output_truncated: boolean
  readonly output_bytes: number
  readonly output_digest: string
  readonly failure_category: string | null
  readonly trace_id: string | null
  readonly context_base: number | null
  readonly context_event_count: number | null
  readonly context_digest: string | null
  readonly artifact_id: string
  /** bigint: pg returns it as a string. */
  readonly artifact_bytes: string | number
  readonly artifact_digest: string
  /** The artifact's deadline less its creation time: the retention the commit bound. */
  readonly retention_ms: number
}

/**
 * The terminal projection an attempt with an artifact committed, rebuilt from its stored columns
 * (an artifact is only ever bound by a worker's commit, whose projection has no `refusedOutput`).
 * Its fingerprint equals the stored one exactly when neither the attempt's terminal columns nor
 * its artifact binding changed since the commit: the one check that the digest a reader verifies
 * content against is the digest the commit bound.
 */
export function storedArtifactProjection(row: StoredArtifactTerminal): TerminalProjection {
  return {
    attemptId: row.id,
    ownerGeneration: row.owner_generation,
    stopReason: row.stop_reason,
    outputPreview: row.output_preview,
    outputTruncated: row.output_truncated,
    outputBytes: row.output_bytes,
    outputDigest: row.output_digest,
    failureCategory: row.failure_category,
    ...(row.trace_id === null ? {} : { traceId: row.trace_id }),
    artifact: {
      artifactId: row.artifact_id,
      bytes: Number(row.artifact_bytes),
      digest: row.artifact_digest,
      retentionMs: Math.round(row.retention_ms),
    },
    ...(row.context_base === null || row.context_event_count === null || row.context_digest === null
      ? {}
      : {
          context: {
            baseSeq: row.context_base,
            eventCount: row.context_event_count,
            digest: row.context_digest,
          },
        }),
  }
}

/** The columns `StoredArtifactTerminal` names, over an attempt `a` joined to its artifact `ar`. */
export const STORED_ARTIFACT_TERMINAL_COLUMNS = sql`
  a.id, a.owner_generation, a.stop_reason, a.output_preview, a.output_truncated, a.output_bytes,
  a.output_digest, a.failure_category, a.metadata->>'traceId' as trace_id, a.context_base,
  a.context_event_count, a.context_digest, ar.id as artifact_id, ar.bytes as artifact_bytes,
  ar.digest as artifact_digest,
  (extract(epoch from ar.expires_at - ar.created_at) * 1000)::float8 as retention_ms
`

export function processLossProjection(
  attemptId: string,
  ownerGeneration: number,
  traceId?: string,
) {
  return buildTerminalProjection(
    attemptId,
    ownerGeneration,
    { stopReason: 'error', output: '', failureCategory: FailureCategory.ProcessLost },
    { traceId },
  )
}

export interface TerminalRow {
  readonly projection: TerminalProjection
  readonly fingerprint: string
  /** The fence owner for an executor's commit; null for synthesized terminals. */
  readonly ownerId: string | null
  /** The tokens the child spent (`TerminalResultInput.usageTokens`); absent when unreported. */
  readonly usageTokens?: number | undefined
}

/**
 * The one place that says how a terminal projection is written. `terminalInput` is a row source
 * (alias it `i`) with one row per attempt; `SET_TERMINAL_FROM_INPUT` is the matching assignment
 * list. Every path that makes an attempt terminal — a worker's commit, process loss, a cancel of
 * a queued attempt — writes through these two, under its own guard.
 */
export function terminalInput(rows: readonly TerminalRow[]): RawBuilder<unknown> {
  return sql`
    select * from unnest(
      ${rows.map((r) => r.projection.attemptId)}::uuid[],
      ${rows.map((r) => r.ownerId)}::text[],
      ${rows.map((r) => r.projection.ownerGeneration)}::int[],
      ${rows.map((r) => r.projection.stopReason)}::text[],
      ${rows.map((r) => r.projection.outputPreview)}::text[],
      ${rows.map((r) => r.projection.outputTruncated)}::boolean[],
      ${rows.map((r) => r.projection.outputBytes)}::int[],
      ${rows.map((r) => r.projection.outputDigest)}::text[],
      ${rows.map((r) => r.projection.failureCategory)}::text[],
      ${rows.map((r) => r.fingerprint)}::text[],
      ${rows.map((r) => r.projection.context?.baseSeq ?? null)}::int[],
      ${rows.map((r) => r.projection.context?.eventCount ?? null)}::int[],
      ${rows.map((r) => r.projection.context?.digest ?? null)}::text[],
      ${rows.map((r) => r.projection.artifact?.artifactId ?? null)}::uuid[],
      ${rows.map((r) => r.usageTokens ?? null)}::bigint[]
    ) as t(id, owner_id, generation, stop_reason, output_preview, output_truncated, output_bytes,
           output_digest, failure_category, fingerprint, context_base, context_event_count,
           context_digest, artifact_id, usage_tokens)
  `
}

export const SET_TERMINAL_FROM_INPUT = sql`
  status = 'terminal',
  stop_reason = i.stop_reason,
  output_preview = i.output_preview,
  output_truncated = i.output_truncated,
  output_bytes = i.output_bytes,
  output_digest = i.output_digest,
  failure_category = i.failure_category,
  fingerprint = i.fingerprint,
  context_base = i.context_base,
  context_event_count = i.context_event_count,
  context_digest = i.context_digest,
  artifact_id = i.artifact_id,
  usage_tokens = i.usage_tokens,
  terminal_at = now(),
  lease_expires_at = null
`
