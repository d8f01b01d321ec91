// Reads PATCHES.md and finds overrides of a dependency's internals in a module's source
// (scripts/patches.test.ts holds the two together).

export interface ListedPatch {
  /** The production module holding the override, relative to the repository. */
  module: string
  /** `package@version` the override is written against. */
  pinned: string
  /** The tests that fail when an upgrade breaks the override. */
  guards: string[]
}

/**
 * Each patch is a `### \`<module>\`` heading followed by `- Pinned: \`pkg@x.y.z\`` and
 * `- Guard tests:` lines naming the test files in backticks; everything else on the page is prose.
 */
export function listedPatches(markdown: string): ListedPatch[] {
  const patches: ListedPatch[] = []
  let current: Partial<ListedPatch> | undefined
  let inGuards = false
  for (const line of markdown.split('\n')) {
    const heading = /^### `([^`]+)`/.exec(line)
    if (heading) {
      current = { module: heading[1]!, guards: [] }
      patches.push(current as ListedPatch)
      continue
    }
    if (line.startsWith('## ')) current = undefined
    if (!current) continue
    const pinned = /^- Pinned: `([^`]+)`/.exec(line)
    if (pinned) current.pinned = pinned[1]!
    if (/^- Guard tests?:/.test(line)) inGuards = true
    else if (/^- /.test(line) || line.trim() === '') inGuards = false
    if (inGuards) {
      for (const [, path] of line.matchAll(/`([^`]+\.test\.ts)`/g)) current.guards!.push(path!)
    }
  }
  return patches
}

/** Names bound by imports from a package (not relative, not `node:`, not a Baton workspace). */
function packageImports(source: string): Set<string> {
  const names = new Set<string>()
  const importLine = /^import\s+(?!type\b)(.+?)\s+from\s+'([^']+)'/gm
  for (const [, clause, from] of source.matchAll(importLine)) {
    if (from!.startsWith('.') || from!.startsWith('node:') || from!.startsWith('@baton/')) continue
    for (const name of clause!.replace(/[{}]/g, ',').split(',')) {
      const local = name
        .trim()
        .split(/\s+as\s+/)
        .pop()
        ?.replace(/^\*\s*/, '')
      if (local) names.add(local)
    }
  }
  return names
}

/** Classes extended, and prototype members assigned, whose root is imported from a package. */
export function overridesIn(source: string): string[] {
  const imported = packageImports(source)
  const found: string[] = []
  for (const [, target] of source.matchAll(/\bextends\s+([A-Za-z_$][\w$.]*)/g)) {
    if (imported.has(target!.split('.')[0]!)) found.push(target!)
  }
  for (const [, target] of source.matchAll(/^\s*([A-Za-z_$][\w$.]*\.prototype\.[\w$]+)\s*=/gm)) {
    if (imported.has(target!.split('.')[0]!)) found.push(target!)
  }
  return found
}
