// `node scripts/check-architecture.ts` (run by `npm run check:scripts`): the import graph of
// Baton's production code (every `src/` file of apps and libs that is not a test) has no circle,
// type-only imports included, and every import between packages goes down the floors below or
// stays on its own floor between packages that may see each other. Exits non-zero with one line
// per problem.
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { REPO_ROOT } from '@baton/testing/processes'

/**
 * The floors, lowest first. A package imports only packages of lower floors; packages of one
 * floor never import each other (store, queue and agents stay apart, DESIGN.md "Processes and
 * parts"). `@baton/testing` is dev-only: it sits above the libraries its fixtures start, and no
 * production file imports it.
 */
export const FLOORS: readonly (readonly string[])[] = [
  ['@baton/contracts'],
  ['@baton/observability', '@baton/subagents', '@baton/client'],
  ['@baton/store', '@baton/queue', '@baton/agents'],
  ['@baton/testing'],
  ['@baton/api', '@baton/worker', '@baton/cli'],
]

const DEV_ONLY = new Set(['@baton/testing'])

const IMPORT =
  /^\s*(?:import|export)\s+(?:type\s+)?(?:[\w$]+\s*,?\s*)?(?:\{[^}]*\}|\*(?:\s+as\s+[\w$]+)?)?\s*from\s*['"]([^'"]+)['"]|^\s*import\s*['"]([^'"]+)['"]|\bimport\(\s*['"]([^'"]+)['"]\s*\)/gm

function productionFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((entry) => {
    const path = join(dir, entry)
    if (statSync(path).isDirectory()) return productionFiles(path)
    return entry.endsWith('.ts') && !entry.endsWith('.test.ts') ? [path] : []
  })
}

export interface SourceFile {
  readonly path: string
  readonly packageName: string
  readonly imports: readonly string[]
}

function packages(): { dir: string; name: string }[] {
  return ['apps', 'libs'].flatMap((parent) =>
    readdirSync(join(REPO_ROOT, parent)).map((entry) => {
      const dir = join(REPO_ROOT, parent, entry)
      const { name } = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as {
        name: string
      }
      return { dir, name }
    }),
  )
}

function readSources(): SourceFile[] {
  return packages().flatMap(({ dir, name }) =>
    productionFiles(join(dir, 'src')).map((path) => ({
      path,
      packageName: name,
      imports: [...readFileSync(path, 'utf8').matchAll(IMPORT)].map(
        (match) => match[1] ?? match[2] ?? match[3] ?? '',
      ),
    })),
  )
}

function floorOf(name: string): number | undefined {
  const floor = FLOORS.findIndex((names) => names.includes(name))
  return floor === -1 ? undefined : floor
}

/** `@baton/x/sub` → `@baton/x`; anything else → undefined. */
function batonPackage(specifier: string): string | undefined {
  if (!specifier.startsWith('@baton/')) return undefined
  return specifier.split('/').slice(0, 2).join('/')
}

export function checkArchitecture(files: readonly SourceFile[] = readSources()): string[] {
  const problems: string[] = []
  const where = (path: string) => relative(REPO_ROOT, path)
  const graph = new Map<string, string[]>()
  for (const file of files) {
    const own = floorOf(file.packageName)
    if (own === undefined) problems.push(`${file.packageName} has no floor in FLOORS`)
    const edges: string[] = []
    for (const specifier of file.imports) {
      if (specifier.startsWith('.')) {
        edges.push(resolve(dirname(file.path), specifier))
        continue
      }
      const target = batonPackage(specifier)
      if (target === undefined || target === file.packageName) continue
      if (DEV_ONLY.has(target)) {
        problems.push(`${where(file.path)}: production code imports the dev-only ${target}`)
        continue
      }
      const floor = floorOf(target)
      if (own !== undefined && floor !== undefined && floor >= own) {
        problems.push(
          `${where(file.path)}: ${file.packageName} (floor ${own}) imports ${target} (floor ${floor})`,
        )
      }
    }
    graph.set(file.path, edges)
  }
  for (const circle of circles(graph)) {
    problems.push(`import circle: ${[...circle, circle[0] ?? ''].map(where).join(' → ')}`)
  }
  return problems
}

/** Every strongly connected set of more than one file (or a file importing itself), by Tarjan. */
function circles(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  const index = new Map<string, number>()
  const low = new Map<string, number>()
  const stack: string[] = []
  const onStack = new Set<string>()
  const found: string[][] = []
  let next = 0
  const visit = (node: string): void => {
    index.set(node, next)
    low.set(node, next)
    next += 1
    stack.push(node)
    onStack.add(node)
    for (const target of graph.get(node) ?? []) {
      if (!graph.has(target)) continue
      if (!index.has(target)) {
        visit(target)
        low.set(node, Math.min(low.get(node)!, low.get(target)!))
      } else if (onStack.has(target)) {
        low.set(node, Math.min(low.get(node)!, index.get(target)!))
      }
    }
    if (low.get(node) !== index.get(node)) return
    const component: string[] = []
    for (;;) {
      const member = stack.pop()!
      onStack.delete(member)
      component.push(member)
      if (member === node) break
    }
    if (component.length > 1 || (graph.get(node) ?? []).includes(node)) found.push(component)
  }
  for (const node of graph.keys()) if (!index.has(node)) visit(node)
  return found
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const problems = checkArchitecture()
  for (const line of problems) console.error(`check-architecture: ${line}`)
  if (problems.length > 0) process.exit(1)
}
