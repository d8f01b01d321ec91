import { sql, type RawBuilder } from 'kysely'
import {
  FailureCategory,
  historyDigest,
  resultDigest,
  terminalFingerprint,
  type TerminalProjection,
} from '@baton/contracts'

/** The inline preview bound, in UTF-16 code units of the output string. */
export const INLINE_PREVIEW_CHARS = 4096

export interface TerminalResultInput {
  readonly stopReason: string
  readonly output: string
  readonly failureCategory: FailureCategory | null
  /** History the child added, appended to its agent's history by the same commit. */
  readonly history?: HistoryDelta
}

/**
 * A validated suffix of an agent's history: the JSON events a child added after the history it
 * was resumed from, numbered from `baseSeq` (that history's length).
 */
export interface HistoryDelta {
  readonly baseSeq: number
  readonly events: readonly unknown[]
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
    ...(result.history === undefined || result.history.events.length === 0
      ? {}
      : {
          // `context` is the fingerprint's field name since migration 0004: renaming it would
          // change every stored fingerprint and turn exact replays into refusals.
          context: {
            baseSeq: result.history.baseSeq,
            eventCount: result.history.events.length,
            digest: historyDigest(result.history.events),
          },
        }),
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
      ${rows.map((r) => r.fingerprint)}::text[],
      ${rows.map((r) => r.projection.context?.baseSeq ?? null)}::int[],
      ${rows.map((r) => r.projection.context?.eventCount ?? null)}::int[],
      ${rows.map((r) => r.projection.context?.digest ?? null)}::text[]
    ) as t(id, owner_id, generation, stop_reason, output_preview, output_truncated, output_bytes,
           output_digest, failure_category, fingerprint, context_base, context_event_count,
           context_digest)
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
  terminal_at = now(),
  lease_expires_at = null
`
