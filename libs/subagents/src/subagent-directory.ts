import { readdir, readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { isSubagentError, SubagentError } from './errors.ts'
import { parseSubagentMarkdown, type SubagentSpec } from './subagent-spec.ts'

/**
 * Load every `*.md` file directly inside `dir` as a subagent spec, in file-name order. A malformed
 * file fails the whole load with its path in the message, and two files declaring one name are
 * rejected: silently letting one shadow the other would make delegation depend on file order.
 */
export async function loadSubagentDirectory(dir: string): Promise<SubagentSpec[]> {
  const entries = await readdir(dir, { withFileTypes: true })
  const files = entries
    .filter((entry) => entry.isFile() && entry.name.endsWith('.md'))
    .map((entry) => entry.name)
    .sort()
  const specs: SubagentSpec[] = []
  const sources = new Map<string, string>()
  for (const file of files) {
    const path = join(dir, file)
    let spec: SubagentSpec
    try {
      spec = parseSubagentMarkdown(await readFile(path, 'utf8'))
    } catch (error) {
      if (isSubagentError(error))
        throw new SubagentError(error.code, `${path}: ${error.message}`, { cause: error })
      throw error
    }
    const previous = sources.get(spec.name)
    if (previous !== undefined) {
      throw new SubagentError(
        'DUPLICATE_SUBAGENT',
        `Subagent name "${spec.name}" is declared by both ${previous} and ${path}; rename one.`,
        {
          details: { name: spec.name },
        },
      )
    }
    sources.set(spec.name, path)
    specs.push(spec)
  }
  return specs
}
