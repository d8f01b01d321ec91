import { readdir, readFile } from 'node:fs/promises'
import { basename, join } from 'node:path'
import { z } from 'zod'
import { AgentsError, AgentsErrorCode } from './agents-error.ts'
import { createScriptRegistry, type ScriptRegistry } from './script-registry.ts'
import type { Script } from './scripted-model.ts'

const delay = { delayMs: z.number().int().min(0).max(600_000).optional() }
const stepSchema = z.discriminatedUnion('kind', [
  z.strictObject({ kind: z.literal('text'), text: z.string(), ...delay }),
  z.strictObject({
    kind: z.literal('tool-calls'),
    calls: z.array(z.strictObject({ toolName: z.string().min(1), input: z.unknown() })).min(1),
    text: z.string().optional(),
    ...delay,
  }),
  z.strictObject({ kind: z.literal('refusal'), text: z.string().optional(), ...delay }),
  z.strictObject({ kind: z.literal('max-tokens'), text: z.string().optional(), ...delay }),
  z.strictObject({
    kind: z.literal('fail'),
    message: z.string().optional(),
    afterText: z.string().optional(),
    ...delay,
  }),
  z.strictObject({ kind: z.literal('hang'), text: z.string().optional(), ...delay }),
  z.strictObject({ kind: z.literal('recall'), ...delay }),
  z.strictObject({ kind: z.literal('request'), ...delay }),
])
const scriptSchema = z.strictObject({
  steps: z.array(stepSchema).min(1),
  resumeSteps: z.array(stepSchema).min(1).optional(),
})

/**
 * Loads every `<name>.json` in `dir` as the script of the model `scripted:<name>`: deterministic
 * demos and end-to-end tests of real subagents without model costs. A malformed file fails the
 * load with its path and what to fix.
 */
export async function loadScriptDirectory(dir: string): Promise<ScriptRegistry> {
  const registry = createScriptRegistry()
  const files = (await readdir(dir, { withFileTypes: true }))
    .filter((e) => e.isFile() && e.name.endsWith('.json'))
    .map((e) => e.name)
    .sort()
  for (const file of files) {
    const path = join(dir, file)
    let raw: unknown
    try {
      raw = JSON.parse(await readFile(path, 'utf8'))
    } catch (error) {
      throw new AgentsError(AgentsErrorCode.INVALID_SCRIPT, `${path}: not valid JSON`, {
        cause: error,
      })
    }
    const parsed = scriptSchema.safeParse(raw)
    if (!parsed.success) {
      const problems = parsed.error.issues
        .map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`)
        .join('; ')
      throw new AgentsError(AgentsErrorCode.INVALID_SCRIPT, `${path}: ${problems}`)
    }
    registry.register(basename(file, '.json'), parsed.data as Script)
  }
  return registry
}
