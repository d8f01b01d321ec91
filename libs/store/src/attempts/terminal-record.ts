import { sql, type RawBuilder } from 'kysely'
import {
  FailureCategory,
  resultDigest,
  terminalFingerprint,
  type TerminalProjection,
} from '@baton/contracts'

/** The inline preview bound, in UTF-16 code units of the output string. */
export const INLINE_PREVIEW_CHARS = 4096

export interface TerminalResultInput {
  readonly stopReason: string
  readonly output: string
  readonly failureCategory: string | null
}

/**
 * Derives the immutable terminal projection (bounded preview, full-output byte size and digest,
 * safe failure category) and its fingerprint. Used by every path that makes an attempt terminal,
 * so a worker's commit, a cancel and a process-loss synthesis follow the same rules.
 */
export function buildTerminalProjection(
  attemptId: string,
  ownerGeneration: number,
  result: TerminalResultInput,
): { projection: TerminalProjection; fingerprint: string } {
  const truncated = result.output.length > INLINE_PREVIEW_CHARS
  const projection: TerminalProjection = {
    attemptId,
    ownerGeneration,
    stopReason: result.stopReason,
    outputPreview: truncated ? result.output.slice(0, INLINE_PREVIEW_CHARS) : result.output,
    outputTruncated: truncated,
    outputBytes: Buffer.byteLength(result.output, 'utf8'),
    outputDigest: resultDigest(result.output),
    failureCategory: result.failureCategory,
  }
  return { projection, fingerprint: terminalFingerprint(projection) }
}

export function processLossProjection(attemptId: string, ownerGeneration: number) {
  return buildTerminalProjection(attemptId, ownerGeneration, {
    stopReason: 'error',
    output: '',
    failureCategory: FailureCategory.ProcessLost,
  })
}

export interface TerminalRow {
  readonly projection: TerminalProjection
  readonly fingerprint: string
  /** The fence owner for an executor's commit; null for synthesized terminals. */
  readonly ownerId: string | null
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
      ${rows.map((r) => r.fingerprint)}::text[]
    ) as t(id, owner_id, generation, stop_reason, output_preview, output_truncated, output_bytes,
           output_digest, failure_category, fingerprint)
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
  terminal_at = now(),
  lease_expires_at = null
`
