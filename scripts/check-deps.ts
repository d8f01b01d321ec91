// `node scripts/check-deps.ts` (run by `npm run check:scripts`): every workspace package declares
// exactly what it imports. A package that imports something undeclared works only because npm
// hoisted it from a neighbour; a declared dependency nothing imports is a dead door. Exits non-zero
// with one line per problem.
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { builtinModules } from 'node:module'
import { join, relative } from 'node:path'
import { REPO_ROOT } from '@baton/testing/processes'

interface Manifest {
  readonly name: string
  readonly workspaces?: readonly string[]
  readonly dependencies?: Record<string, string>
  readonly devDependencies?: Record<string, string>
}

/**
 * Declared for their command line, not imported: the tool chain of the root. Each is run by a
 * package.json script or a test.
 */
const TOOLS = new Set([
  '@redocly/cli',
  '@stoplight/spectral-cli',
  'eslint',
  'prettier',
  'turbo',
  'typescript',
])

const SOURCE = /\.(ts|js|mjs|cjs)$/
/** Static imports and re-exports (braces may span lines), side-effect imports, dynamic imports. */
const IMPORT =
  /^\s*(?:import|export)\s+(?:type\s+)?(?:[\w$]+\s*,?\s*)?(?:\{[^}]*\}|\*(?:\s+as\s+[\w$]+)?)?\s*from\s*['"]([^'"]+)['"]|^\s*import\s*['"]([^'"]+)['"]|\bimport\(\s*['"]([^'"]+)['"]\s*\)/gm

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((entry) => {
    if (entry === 'node_modules' || entry.startsWith('.')) return []
    const path = join(dir, entry)
    if (statSync(path).isDirectory()) return sourceFiles(path)
    return SOURCE.test(entry) ? [path] : []
  })
}

/** `@scope/name/sub` → `@scope/name`; `name/sub` → `name`; relative and built-in → undefined. */
function packageOf(specifier: string): string | undefined {
  if (specifier.startsWith('.') || specifier.startsWith('/')) return undefined
  if (specifier.startsWith('node:') || builtinModules.includes(specifier.split('/')[0]!))
    return undefined
  const parts = specifier.split('/')
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0]
}

function importsOf(files: readonly string[]): Map<string, string> {
  const found = new Map<string, string>()
  for (const file of files) {
    for (const match of readFileSync(file, 'utf8').matchAll(IMPORT)) {
      const name = packageOf(match[1] ?? match[2] ?? match[3] ?? '')
      if (name !== undefined && !found.has(name)) found.set(name, relative(REPO_ROOT, file))
    }
  }
  return found
}

/** The packages and the files each one's imports are read from. */
function workspaces(): { dir: string; manifest: Manifest; files: string[] }[] {
  const read = (dir: string): Manifest =>
    JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as Manifest
  const root = read(REPO_ROOT)
  const rootFiles = [
    ...sourceFiles(join(REPO_ROOT, 'scripts')),
    ...readdirSync(REPO_ROOT)
      .filter((f) => SOURCE.test(f))
      .map((f) => join(REPO_ROOT, f)),
  ]
  const members = (root.workspaces ?? []).flatMap((pattern) => {
    const parent = join(REPO_ROOT, pattern.replace(/\/\*$/, ''))
    return readdirSync(parent)
      .map((entry) => join(parent, entry))
      .filter((dir) => statSync(join(dir, 'package.json'), { throwIfNoEntry: false }) !== undefined)
  })
  return [
    { dir: REPO_ROOT, manifest: root, files: rootFiles },
    ...members.map((dir) => ({ dir, manifest: read(dir), files: sourceFiles(dir) })),
  ]
}

/**
 * Every problem, one line each. The root's devDependencies are the shared tool chain of every
 * package (one vitest process runs all tests, one global setup starts the services): a package may
 * import them without declaring them again, and each must be imported somewhere or be a tool.
 */
export function checkDependencies(): string[] {
  const problems: string[] = []
  const all = workspaces()
  const shared = new Set(Object.keys(all[0]?.manifest.devDependencies ?? {}))
  const importedAnywhere = new Set<string>()
  for (const { dir, manifest, files } of all) {
    const where = relative(REPO_ROOT, dir) || '(root)'
    const own = new Set(Object.keys(manifest.dependencies ?? {}))
    if (dir !== REPO_ROOT)
      for (const name of Object.keys(manifest.devDependencies ?? {})) own.add(name)
    const imported = importsOf(files)
    for (const [name, file] of imported) {
      importedAnywhere.add(name)
      if (name !== manifest.name && !own.has(name) && !shared.has(name))
        problems.push(`${where}: imports ${name} (${file}) without declaring it in package.json`)
    }
    for (const name of own)
      if (!imported.has(name) && !isTypesFor(name, imported))
        problems.push(`${where}: declares ${name}, which nothing in it imports`)
  }
  for (const name of shared)
    if (!importedAnywhere.has(name) && !TOOLS.has(name) && !isTypesFor(name, importedAnywhere))
      problems.push(`(root): declares the shared ${name}, which no package imports`)
  return problems
}

/** `@types/x` is used where `x` is (`@types/node` wherever Node runs: everywhere). */
function isTypesFor(name: string, imported: ReadonlySet<string> | ReadonlyMap<string, string>) {
  if (!name.startsWith('@types/')) return false
  const typed = name.slice('@types/'.length)
  return typed === 'node' || imported.has(typed)
}

const problems = checkDependencies()
for (const line of problems) console.error(`check-deps: ${line}`)
if (problems.length > 0) process.exit(1)
