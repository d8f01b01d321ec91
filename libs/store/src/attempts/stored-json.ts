/**
 * JSON the ledger's `jsonb` can hold. `jsonb` refuses U+0000 in any string and a lone surrogate
 * has no UTF-8 form, yet a child's history (a tool reading a binary file) may carry either.
 * Lone surrogates become U+FFFD before anything is digested or stored (`wellFormedJson`); U+0000
 * is escaped on write and restored on read, so every other string is stored unchanged.
 *
 * Escape: U+FDD0 (a noncharacter, reserved for internal use) introduces a pair: U+FDD0 '0' is
 * U+0000 and U+FDD0 U+FDD0 is U+FDD0 itself. A string containing neither is stored as is.
 */
const ESCAPE = '\uFDD0'
const ESCAPED = new RegExp(`${ESCAPE}(.)`, 'gsu')
const TO_ESCAPE = new RegExp(`[\u0000${ESCAPE}]`, 'gu')

/** Every string (keys too) made well-formed: lone surrogates become U+FFFD. */
export function wellFormedJson(value: unknown): unknown {
  return mapStrings(value, (s) => s.toWellFormed())
}

/** The form written to `jsonb`: U+0000 and the escape character escaped. */
export function toStoredJson(value: unknown): unknown {
  return mapStrings(value, escapeText)
}

/** The inverse of `toStoredJson`, applied to everything read back. */
export function fromStoredJson(value: unknown): unknown {
  return mapStrings(value, unescapeText)
}

function escapeText(text: string): string {
  if (!text.includes('\u0000') && !text.includes(ESCAPE)) return text
  return text.replace(TO_ESCAPE, (c) => (c === ESCAPE ? ESCAPE + ESCAPE : `${ESCAPE}0`))
}

function unescapeText(text: string): string {
  if (!text.includes(ESCAPE)) return text
  return text.replace(ESCAPED, (_, c: string) => (c === '0' ? '\u0000' : ESCAPE))
}

function mapStrings(value: unknown, map: (text: string) => string): unknown {
  if (typeof value === 'string') return map(value)
  if (Array.isArray(value)) return value.map((v) => mapStrings(v, map))
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [map(k), mapStrings(v, map)]))
  }
  return value
}
