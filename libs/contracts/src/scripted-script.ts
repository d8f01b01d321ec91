import { z } from 'zod'

/** Largest output a script may ask for: a demo child must not be a way to exhaust a worker. */
export const SCRIPT_OUTPUT_BYTES_MAX = 32 * 1024 * 1024

/**
 * The `scripted` subagent's script (its prompt, as JSON):
 *
 *   { "output"?: string, "delayMs"?: number, "hang"?: true, "fail"?: string, "outputBytes"?: number,
 *     "awaitSteering"?: number, "ignoreCancelMs"?: number }
 */
export const scriptSchema = z.strictObject({
  output: z.string().optional(),
  delayMs: z.number().int().min(0).max(600_000).optional(),
  hang: z.literal(true).optional(),
  fail: z.string().optional(),
  outputBytes: z.number().int().min(0).max(SCRIPT_OUTPUT_BYTES_MAX).optional(),
  /** Wait for this many steering messages, then answer with their texts, one per line. */
  awaitSteering: z.number().int().min(1).max(1000).optional(),
  /** Notice a cancellation only this long after it arrived. */
  ignoreCancelMs: z.number().int().min(1).max(600_000).optional(),
})
export type Script = z.infer<typeof scriptSchema>

export type ScriptReading =
  | { readonly kind: 'script'; readonly script: Script }
  /** Not a JSON object: the child echoes the text (documented, and what demos rely on). */
  | { readonly kind: 'echo'; readonly text: string }
  /** A JSON object that is not a script: refused at accept time, never guessed at. */
  | { readonly kind: 'invalid'; readonly issues: readonly { path: string; message: string }[] }

/** Reads a `scripted` prompt (its text blocks joined by newlines): the one reading API and worker share. */
export function readScript(prompt: readonly { readonly text: string }[]): ScriptReading {
  const text = prompt.map((b) => b.text).join('\n')
  const trimmed = text.trim()
  if (!trimmed.startsWith('{')) return { kind: 'echo', text }
  let raw: unknown
  try {
    raw = JSON.parse(trimmed)
  } catch {
    return { kind: 'echo', text }
  }
  const parsed = scriptSchema.safeParse(raw)
  if (parsed.success) return { kind: 'script', script: parsed.data }
  return {
    kind: 'invalid',
    issues: parsed.error.issues.map((i) => ({
      path: ['script', ...i.path.map(String)].join('/'),
      message: i.message,
    })),
  }
}
