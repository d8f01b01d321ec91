// The fenced code blocks of Baton's documentation, each with its info string read into one closed
// vocabulary: a language the docs runner has a checker for, and at most one attribute. Anything
// outside it is a problem, reported with its place, so no block can be skipped by accident.
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { REPO_ROOT } from '@baton/testing/processes'

/** Each language and its checker: sh and bash run, ts runs, json and markdown parse, text is a diagram. */
export const LANGUAGES = ['sh', 'bash', 'ts', 'json', 'markdown', 'text'] as const
export type Language = (typeof LANGUAGES)[number]

/**
 * Shell blocks that cannot run as such name the check that stands in for running them:
 * - `up`: `npm run up`, with variables up or the apps read (the runner started the system so);
 * - `ci`: commands `.ci/run` runs verbatim (`npm install-test`);
 * - `compose`: `docker compose` on `infra/docker-compose.yml`, naming only its services.
 */
export const MARKERS = ['up', 'ci', 'compose', 'bench'] as const
export type Marker = (typeof MARKERS)[number]

/** JSON blocks may name the schema Baton reads them with. */
export const SCHEMAS = ['scripted-script', 'scripted-model', 'error-body'] as const
export type SchemaName = (typeof SCHEMAS)[number]

export interface DocBlock {
  /** Path from the repository root, e.g. `docs/api.md`. */
  readonly file: string
  /** Line of the opening fence, 1-based. */
  readonly line: number
  readonly info: string
  readonly language: Language
  readonly marker?: Marker
  readonly schema?: SchemaName
  readonly body: string
}

export interface BlockProblem {
  readonly file: string
  readonly line: number
  readonly problem: string
}

/** Where the samples live: the README, every page of docs/, and each package's README. */
export function documentationFiles(): string[] {
  const inDir = (dir: string, match: (name: string) => boolean): string[] => {
    try {
      return readdirSync(join(REPO_ROOT, dir))
        .filter(match)
        .sort()
        .map((name) => join(dir, name))
    } catch {
      return []
    }
  }
  const packageReadmes = ['apps', 'libs'].flatMap((group) =>
    inDir(group, () => true).flatMap((dir) => inDir(dir, (name) => name === 'README.md')),
  )
  return ['README.md', ...inDir('docs', (name) => name.endsWith('.md')), ...packageReadmes]
}

const FENCE = /^(\s*)(`{3,}|~{3,})(.*)$/

/** Every fenced block of `markdown`, in order, with what its info string says, or why not. */
export function extractBlocks(
  file: string,
  markdown: string,
): { blocks: DocBlock[]; problems: BlockProblem[] } {
  const blocks: DocBlock[] = []
  const problems: BlockProblem[] = []
  const lines = markdown.split('\n')
  for (let i = 0; i < lines.length; i += 1) {
    const open = FENCE.exec(lines[i] ?? '')
    if (open === null) continue
    const [, indent = '', fence = '', info = ''] = open
    const body: string[] = []
    let j = i + 1
    for (; j < lines.length; j += 1) {
      const line = lines[j] ?? ''
      const close = FENCE.exec(line)
      if (close?.[2]?.startsWith(fence) === true && close[3]?.trim() === '') break
      // A fence indented inside a list item: its lines carry the same indent.
      body.push(line.startsWith(indent) ? line.slice(indent.length) : line.trimStart())
    }
    if (j === lines.length) {
      problems.push({ file, line: i + 1, problem: 'unclosed code fence' })
      break
    }
    const read = readInfo(info.trim())
    if ('problem' in read) problems.push({ file, line: i + 1, problem: read.problem })
    else blocks.push({ file, line: i + 1, info: info.trim(), ...read, body: body.join('\n') })
    i = j
  }
  return { blocks, problems }
}

type InfoReading =
  { language: Language; marker?: Marker; schema?: SchemaName } | { problem: string }

/** `lang`, `lang check=<marker>` (sh, bash) or `lang schema=<name>` (json); nothing else. */
export function readInfo(info: string): InfoReading {
  const [language = '', ...attributes] = info.split(/\s+/).filter((word) => word !== '')
  if (!isOneOf(LANGUAGES, language)) {
    return {
      problem:
        language === ''
          ? `a code block without a language: label it one of ${LANGUAGES.join(', ')}`
          : `unknown language "${language}": the docs runner checks ${LANGUAGES.join(', ')}`,
    }
  }
  if (attributes.length === 0) return { language }
  if (attributes.length > 1) return { problem: `one attribute at most, got "${info}"` }
  const [key, value = ''] = (attributes[0] ?? '').split('=')
  if (key === 'check' && (language === 'sh' || language === 'bash')) {
    if (isOneOf(MARKERS, value)) return { language, marker: value }
    return { problem: `unknown check "${value}": the markers are ${MARKERS.join(', ')}` }
  }
  if (key === 'schema' && language === 'json') {
    if (isOneOf(SCHEMAS, value)) return { language, schema: value }
    return { problem: `unknown schema "${value}": the schemas are ${SCHEMAS.join(', ')}` }
  }
  return { problem: `"${attributes[0] ?? ''}" is not an attribute of a ${language} block` }
}

function isOneOf<T extends string>(set: readonly T[], value: string): value is T {
  return (set as readonly string[]).includes(value)
}

/** Every block of every documentation file, and every problem with an info string or fence. */
export function allBlocks(): { blocks: DocBlock[]; problems: BlockProblem[] } {
  const blocks: DocBlock[] = []
  const problems: BlockProblem[] = []
  for (const file of documentationFiles()) {
    const found = extractBlocks(file, readFileSync(join(REPO_ROOT, file), 'utf8'))
    blocks.push(...found.blocks)
    problems.push(...found.problems)
  }
  return { blocks, problems }
}

/** `file:line`, as an editor opens it. */
export const where = (at: { readonly file: string; readonly line: number }): string =>
  `${at.file}:${at.line}`
