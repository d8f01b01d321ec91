/** What the preview shows instead of U+0000, and what a lone surrogate becomes when stored. */
const REPLACEMENT = '\uFFFD'

/**
 * The output as the ledger stores it: its UTF-8 bytes. A lone UTF-16 surrogate has no UTF-8 form
 * and becomes U+FFFD, exactly as Node's UTF-8 encoder (and so `resultDigest`) treats it.
 */
export function storedOutput(output: string): string {
  return output.toWellFormed()
}

/**
 * The inline preview of a (well-formed) output: its longest prefix whose UTF-8 encoding fits in
 * `maxBytes`, never splitting a character, with U+0000 shown as U+FFFD (a `text` column cannot
 * hold it; the complete output keeps it).
 */
export function inlinePreview(output: string, maxBytes: number): string {
  let bytes = 0
  let end = 0
  while (end < output.length) {
    const unit = output.charCodeAt(end)
    const [units, size] =
      unit < 0x80 ? [1, 1] : unit < 0x800 ? [1, 2] : isHighSurrogate(unit) ? [2, 4] : [1, 3]
    if (bytes + size > maxBytes) break
    bytes += size
    end += units
  }
  return output.slice(0, end).replaceAll('\u0000', REPLACEMENT)
}

/** Whether the preview cannot stand for the whole output, so an artifact must hold it. */
export function needsArtifact(output: string, outputBytes: number, inlineBytes: number): boolean {
  return outputBytes > inlineBytes || output.includes('\u0000')
}

function isHighSurrogate(unit: number): boolean {
  return unit >= 0xd800 && unit <= 0xdbff
}
