import { z } from 'zod'

/**
 * Whether the ledger can hold `text` exactly as given. Postgres `text` and `jsonb` refuse U+0000,
 * and a lone UTF-16 surrogate has no UTF-8 form, so either would fail the whole batched statement
 * it travels in; refusing them at the edge keeps every other string round-tripping unchanged.
 */
export function isStorableText(text: string): boolean {
  return text.isWellFormed() && !text.includes('\u0000')
}

const NOT_STORABLE = 'must not contain U+0000 or a lone surrogate'

/** A string the ledger can store exactly: every caller-supplied text that is written is one. */
export function storableText(): z.ZodString {
  return z.string().refine(isStorableText, NOT_STORABLE)
}
