// Durations on the command line carry their unit, like every duration in Baton's code: a bare
// number would be ambiguous between seconds and milliseconds.

const DURATION = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)$/
const UNIT_MS = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const

/** `500ms`, `30s`, `1.5s`, `2m`, `12h`, `30d` → milliseconds (rounded); `undefined` for anything else. */
export function parseDuration(text: string): number | undefined {
  const match = DURATION.exec(text.trim())
  if (match === null) return undefined
  const [, amount, unit] = match
  return Math.round(Number(amount) * UNIT_MS[unit as keyof typeof UNIT_MS])
}

/** An elapsed time for the progress line: `0.4s`, `12.3s`, then `1m05s` from a minute on. */
export function formatElapsed(ms: number): string {
  const tenths = Math.floor(Math.max(0, ms) / 100)
  if (tenths < 600) return `${Math.floor(tenths / 10)}.${tenths % 10}s`
  const seconds = Math.floor(tenths / 10)
  return `${Math.floor(seconds / 60)}m${String(seconds % 60).padStart(2, '0')}s`
}
