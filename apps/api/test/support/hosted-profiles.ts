import { mkdir, mkdtemp, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

/** A step of a `scripted:<name>` model (the JSON shape `loadScriptDirectory` reads). */
export type ScriptStepJson = Readonly<Record<string, unknown>>

/** A whole script: its steps, and the steps of a model that resumes a conversation. */
export interface ScriptJson {
  readonly steps: readonly ScriptStepJson[]
  readonly resumeSteps?: readonly ScriptStepJson[]
}

/**
 * A profiles file and a scripts directory for hosted tests: `profiles` is the TOML text, `scripts`
 * the scripted models by name. Answers the environment API and workers need.
 */
export async function hostedEnv(
  profiles: string,
  scripts: Readonly<Record<string, readonly ScriptStepJson[] | ScriptJson>>,
): Promise<Record<string, string>> {
  const dir = await mkdtemp(join(tmpdir(), 'baton-hosted-'))
  const scriptsDir = join(dir, 'scripts')
  await mkdir(scriptsDir)
  for (const [name, script] of Object.entries(scripts))
    await writeFile(
      join(scriptsDir, `${name}.json`),
      JSON.stringify(Array.isArray(script) ? { steps: script } : script),
    )
  const profilesFile = join(dir, 'profiles.toml')
  await writeFile(profilesFile, profiles)
  return { PROFILES_FILE: profilesFile, SCRIPTED_MODELS_DIR: scriptsDir }
}

/** A parent that answers every run with the user messages of its conversation, one per line. */
export const RECALLING_PARENT = `
[profiles.recall]
model_id = "scripted:recall"
`

/** A parent on `scripted:lead` that may delegate to `helper`, a child on `scripted:helper`. */
export function leadWithHelper(description: string): string {
  return `
[profiles.lead]
model_id = "scripted:lead"
subagents = ["helper"]

[profiles.helper]
model_id = "scripted:helper"

[subagents.helper]
profile = "helper"
description = "${description}"
`
}
