// The checkers of blocks that are read, not run: JSON is parsed (and validated by the schema Baton
// reads it with, when the block names one), a markdown block is a subagent spec parsed by Baton's
// own parser and judged by the catalog both apps load, and a text block is a diagram.
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { loadScriptDirectory } from '@baton/agents'
import { errorBodySchema, scriptSchema } from '@baton/contracts'
import { createSubagentCatalog, parseSubagentMarkdown } from '@baton/subagents'
import type { DocBlock, SchemaName } from './blocks.ts'

/** Throws, saying what is wrong, unless the block parses (and passes its schema). */
export async function checkJsonBlock(block: DocBlock): Promise<void> {
  const value: unknown = JSON.parse(block.body)
  if (block.schema !== undefined) await validate(block.schema, value, block.body)
}

async function validate(schema: SchemaName, value: unknown, text: string): Promise<void> {
  switch (schema) {
    case 'scripted-script':
      // The `scripted` child's prompt: the API refuses a JSON object that is not a script.
      scriptSchema.parse(value)
      return
    case 'error-body':
      errorBodySchema.parse(value)
      return
    case 'scripted-model': {
      // A `scripted:<name>` model's script, loaded as a worker loads SCRIPTED_MODELS_DIR.
      const dir = await mkdtemp(join(tmpdir(), 'baton-docs-model-'))
      try {
        await writeFile(join(dir, 'sample.json'), text)
        await loadScriptDirectory(dir)
      } finally {
        await rm(dir, { recursive: true, force: true })
      }
      return
    }
    default: {
      const unknown: never = schema
      throw new Error(`no validator for schema ${String(unknown)}`)
    }
  }
}

/** Throws unless the block is a subagent spec the fleet can run (as the API would admit it). */
export function checkMarkdownBlock(block: DocBlock): void {
  const spec = parseSubagentMarkdown(block.body)
  const admission = createSubagentCatalog([spec]).admit(spec.name)
  if (admission.kind !== 'runnable') {
    throw new Error(`the spec "${spec.name}" is not runnable: ${JSON.stringify(admission)}`)
  }
}
