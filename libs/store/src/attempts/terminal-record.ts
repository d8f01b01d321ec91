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
