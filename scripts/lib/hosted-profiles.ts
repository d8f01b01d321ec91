// Hosted parents on scripted models for the bench and chaos: a profiles file (docs/hosted.md)
// naming parents that may delegate to one child subagent, and the scripts of their models.
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'

/** A scripted model's script, as `SCRIPTED_MODELS_DIR` holds it: `<name>.json`. */
export type ScriptJson = Readonly<Record<string, unknown>>

export interface HostedProfiles {
  /** Parent profiles by name, each on the scripted model of its own name. */
  readonly parents: Readonly<Record<string, ScriptJson>>
  /** The one subagent they delegate to, on a profile and scripted model of its name. */
  readonly child: {
    readonly name: string
    readonly description: string
    readonly script: ScriptJson
  }
}

/**
 * Writes `profiles.toml` into `dir` and every model's script into `scriptedModelsDir`; answers the
 * env the API and the workers need for them.
 */
export async function writeHostedProfiles(
  dir: string,
  scriptedModelsDir: string,
  profiles: HostedProfiles,
): Promise<{ PROFILES_FILE: string; SCRIPTED_MODELS_DIR: string }> {
  const { child } = profiles
  const toml = [
    ...Object.keys(profiles.parents).map(
      (name) =>
        `[profiles.${name}]\nmodel_id = "scripted:${name}"\nsubagents = ["${child.name}"]\n`,
    ),
    `[profiles.${child.name}]\nmodel_id = "scripted:${child.name}"\n`,
    `[subagents.${child.name}]\nprofile = "${child.name}"\ndescription = "${child.description}"\n`,
  ].join('\n')
  const scripts = { ...profiles.parents, [child.name]: child.script }
  for (const [name, script] of Object.entries(scripts))
    await writeFile(join(scriptedModelsDir, `${name}.json`), JSON.stringify(script))
  const profilesFile = join(dir, 'profiles.toml')
  await writeFile(profilesFile, toml)
  return { PROFILES_FILE: profilesFile, SCRIPTED_MODELS_DIR: scriptedModelsDir }
}
