// Relative links between documentation pages: each must name a file of the repository and, with
// `#anchor`, a heading of that page, slugged as GitHub slugs it.
import { existsSync, readFileSync } from 'node:fs'
import { dirname, join, normalize } from 'node:path'
import { REPO_ROOT } from '@baton/testing/processes'

export interface LinkProblem {
  readonly file: string
  readonly line: number
  readonly target: string
  readonly problem: string
}

/** Prose lines of `markdown` (fenced blocks blanked, so line numbers stay), inline code removed. */
function proseLines(markdown: string): string[] {
  let fence: string | undefined
  return markdown.split('\n').map((line) => {
    const marker = /^\s*(`{3,}|~{3,})/.exec(line)?.[1]
    if (fence === undefined && marker !== undefined) {
      fence = marker
      return ''
    }
    if (fence !== undefined) {
      if (marker?.startsWith(fence) === true) fence = undefined
      return ''
    }
    return line.replace(/`[^`]*`/g, '')
  })
}

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces as `-`. */
export function slug(heading: string): string {
  return heading
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/`/g, '')
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-')
}

/** Every anchor a page offers: one per heading, a repeated slug numbered `-1`, `-2`, … */
export function anchorsOf(markdown: string): Set<string> {
  const anchors = new Set<string>()
  const seen = new Map<string, number>()
  let fence = false
  for (const line of markdown.split('\n')) {
    if (/^\s*(`{3,}|~{3,})/.test(line)) fence = !fence
    const heading = fence ? null : /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line)
    if (heading === null) continue
    const base = slug(heading[1] ?? '')
    const count = seen.get(base) ?? 0
    seen.set(base, count + 1)
    anchors.add(count === 0 ? base : `${base}-${count}`)
  }
  return anchors
}

const LINK = /\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)|^\s*\[[^\]]+\]:\s*(\S+)/g

/** What is wrong with the relative links of `file` (a path from the repository root). */
export function checkLinks(file: string): LinkProblem[] {
  const problems: LinkProblem[] = []
  const lines = proseLines(readFileSync(join(REPO_ROOT, file), 'utf8'))
  lines.forEach((line, index) => {
    for (const match of line.matchAll(LINK)) {
      const target = match[1] ?? match[2] ?? ''
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue // http:, https:, mailto:
      const problem = checkTarget(file, target)
      if (problem !== undefined) problems.push({ file, line: index + 1, target, problem })
    }
  })
  return problems
}

function checkTarget(file: string, target: string): string | undefined {
  const [path = '', anchor] = target.split('#')
  const resolved = path === '' ? file : normalize(join(dirname(file), decodeURI(path)))
  const exists = existsSync(join(REPO_ROOT, resolved))
  if (resolved.startsWith('..') || !exists) return `${resolved} does not exist`
  if (anchor === undefined) return undefined
  if (!resolved.endsWith('.md')) return `an anchor into ${resolved}, which is not a page`
  const anchors = anchorsOf(readFileSync(join(REPO_ROOT, resolved), 'utf8'))
  return anchors.has(anchor) ? undefined : `${resolved} has no heading #${anchor}`
}
