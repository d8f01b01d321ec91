import { AgentsError, AgentsErrorCode } from './agents-error.ts'
import type { Script } from './scripted-model.ts'

/**
 * Named scripts for `scripted:<name>` model ids: demos and tests that exercise the whole delegation
 * path without model costs. A registry is an explicit object (no module-global state), so two
 * runtimes in one process never see each other's scripts.
 */
export interface ScriptRegistry {
  register(name: string, script: Script): void
  get(name: string): Script
  has(name: string): boolean
  names(): readonly string[]
}

export function createScriptRegistry(
  initial: Readonly<Record<string, Script>> = {},
): ScriptRegistry {
  const scripts = new Map<string, Script>()

  const registry: ScriptRegistry = {
    register(name, script) {
      if (name === '' || name.includes(':')) {
        throw new AgentsError(
          AgentsErrorCode.INVALID_MODEL_ID,
          `Script name "${name}" must be non-empty and contain no ":".`,
        )
      }
      scripts.set(name, script)
    },
    get(name) {
      const script = scripts.get(name)
      if (script === undefined) {
        throw new AgentsError(
          AgentsErrorCode.UNKNOWN_SCRIPT,
          `No script named "${name}" is registered (known: ${[...scripts.keys()].join(', ') || 'none'}).`,
        )
      }
      return script
    },
    has: (name) => scripts.has(name),
    names: () => [...scripts.keys()],
  }
  for (const [name, script] of Object.entries(initial)) registry.register(name, script)
  return registry
}
