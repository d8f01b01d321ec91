import { parse as parseYaml } from 'yaml'
import { z } from 'zod'
import { SubagentError } from './errors.ts'

/**
 * The serializable part of a subagent definition: what a markdown file (or a service, or a CLI)
 * can say about a child without carrying an executable runtime handle. `tools` are required parent
 * tools and `optionalTools` attach when present; both are inheritance policy, not child-owned
 * toolsets. Policy keys without a dedicated field (`denied_tools`, `inherit_hooks`,
 * `inherit_capabilities`, `denied_capabilities`) and any other frontmatter keys are kept in
 * `metadata`, normalized, so hosts can map them without re-parsing the file.
 */
export interface SubagentSpec {
  readonly name: string
  readonly description: string
  readonly tools: readonly string[]
  readonly optionalTools: readonly string[]
  /** A concrete model id, `inherit`, or absent (which also means inherit). */
  readonly model?: string
  readonly systemPrompt: string
  readonly metadata: Readonly<Record<string, unknown>>
}

/** A YAML list of names or a comma-separated string, normalized to trimmed, unique names. */
const nameList = z
  .union([z.array(z.string()), z.string()], {
    error: 'must be a list of names or a comma-separated string',
  })
  .transform((value) => [
    ...new Set(
      (typeof value === 'string' ? value.split(',') : value)
        .map((name) => name.trim())
        .filter((name) => name.length > 0),
    ),
  ])

/** Tell "you left it out" apart from "you wrote the wrong kind of value". */
const requiredText = (hint: string) => (issue: { readonly input?: unknown }) =>
  issue.input === undefined || issue.input === null
    ? `is required: add \`${hint}\``
    : 'must be text'

const frontmatterSchema = z.looseObject({
  name: z
    .string({ error: 'is required: add `name: <subagent-name>`' })
    .trim()
    .regex(/^[A-Za-z0-9][A-Za-z0-9_.-]*$/, {
      error: 'must start with a letter or digit and contain only letters, digits, "_", "." or "-"',
    }),
  description: z
    .string({ error: requiredText('description: <when to delegate to this subagent>') })
    .trim()
    .min(1, { error: 'must not be empty' }),
  // `nullish`: a key written with no value (`tools:`) means the same as leaving it out.
  tools: nameList.nullish(),
  optional_tools: nameList.nullish(),
  denied_tools: nameList.nullish(),
  model: z
    .string({ error: 'must be a model id or `inherit`' })
    .trim()
    .min(1, { error: 'must not be empty (omit it or use `inherit`)' })
    .optional(),
  inherit_hooks: z.boolean({ error: 'must be true or false' }).optional(),
  inherit_capabilities: z.boolean({ error: 'must be true or false' }).optional(),
  denied_capabilities: nameList.nullish(),
})

const FRONTMATTER = /^---[ \t]*\r?\n([\s\S]*?)\r?\n---[ \t]*(?:\r?\n|$)/

/** Parse a markdown subagent file: YAML frontmatter between `---` lines, then the system prompt. */
export function parseSubagentMarkdown(text: string): SubagentSpec {
  const source = text.replace(/^\uFEFF/, '').trimStart()
  const match = FRONTMATTER.exec(source)
  if (match === null) {
    throw invalid(
      'missing YAML frontmatter: start the file with a `---` line, the fields, then a closing `---` line',
    )
  }
  let raw: unknown
  try {
    raw = parseYaml(match[1] ?? '')
  } catch (error) {
    throw invalid(
      `frontmatter is not valid YAML (${error instanceof Error ? error.message.split('\n')[0] : String(error)})`,
      error,
    )
  }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    throw invalid('frontmatter must be a YAML mapping of fields such as `name:` and `description:`')
  }
  const parsed = frontmatterSchema.safeParse(raw)
  if (!parsed.success) {
    const problems = parsed.error.issues.map(
      (issue) => `\`${issue.path.join('.') || '(frontmatter)'}\` ${issue.message}`,
    )
    throw invalid(problems.join('; '), parsed.error)
  }
  const { name, description, tools, optional_tools, model, ...rest } = parsed.data
  // Drop keys whose values were absent so metadata only records what the file said.
  const metadata = Object.fromEntries(
    Object.entries(rest).filter(([, value]) => value !== undefined && value !== null),
  )
  return {
    name,
    description,
    tools: tools ?? [],
    optionalTools: optional_tools ?? [],
    ...(model === undefined ? {} : { model }),
    systemPrompt: source.slice(match[0].length).trim(),
    metadata,
  }
}

function invalid(reason: string, cause?: unknown): SubagentError {
  return new SubagentError(
    'INVALID_SPEC',
    `Invalid subagent markdown: ${reason}.`,
    cause === undefined ? {} : { cause },
  )
}
