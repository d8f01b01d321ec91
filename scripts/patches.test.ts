// PATCHES.md is the one door for overrides of a dependency's internals: a production module that
// subclasses or rewrites a class it imports from a package must be listed there, with the version
// it is pinned to and the test that fails when an upgrade breaks it; a listed module must still
// hold an override, and its guard test must exist.
import { existsSync, readFileSync, readdirSync } from 'node:fs'
import { join, relative } from 'node:path'
import { describe, expect, test } from 'vitest'
import { REPO_ROOT } from '@baton/testing/processes'
import { listedPatches, overridesIn } from './lib/patches.ts'

function productionModules(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) return entry.name === 'node_modules' ? [] : productionModules(path)
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts') ? [path] : []
  })
}

const sourceRoots = ['apps', 'libs'].flatMap((top) =>
  readdirSync(join(REPO_ROOT, top)).map((pkg) => join(REPO_ROOT, top, pkg, 'src')),
)

describe('PATCHES.md', () => {
  const patches = listedPatches(readFileSync(join(REPO_ROOT, 'PATCHES.md'), 'utf8'))

  test('lists every production module that overrides a class imported from a package', () => {
    const overriding = sourceRoots
      .filter((root) => existsSync(root))
      .flatMap(productionModules)
      .filter((file) => overridesIn(readFileSync(file, 'utf8')).length > 0)
      .map((file) => relative(REPO_ROOT, file))
    expect(overriding.sort()).toEqual(patches.map((p) => p.module).sort())
  })

  test('names, for each, the pinned version and a guard test that exists', () => {
    for (const patch of patches) {
      expect(patch.pinned, patch.module).toMatch(/^\S+@\d+\.\d+\.\d+$/)
      expect(patch.guards.length, patch.module).toBeGreaterThan(0)
      for (const guard of patch.guards) expect(existsSync(join(REPO_ROOT, guard)), guard).toBe(true)
      const [name, version] = patch.pinned.split(/@(?=[^@]+$)/)
      const manifest = JSON.parse(
        readFileSync(join(REPO_ROOT, 'node_modules', name!, 'package.json'), 'utf8'),
      ) as { version: string }
      expect(manifest.version, `${patch.module} is pinned to ${patch.pinned}`).toBe(version)
    }
  })
})

describe('overridesIn', () => {
  test('finds a class extending an import from a package, and nothing else', () => {
    const source = [
      "import pg from 'pg'",
      "import { Worker } from 'bullmq'",
      "import { Local } from './local.ts'",
      "import { Shared } from '@baton/contracts'",
      'class A extends pg.Client {}',
      'class B extends Worker {}',
      'class C extends Local {}',
      'class D extends Shared {}',
      'class E extends Error {}',
      'Worker.prototype.run = () => {}',
    ].join('\n')
    expect(overridesIn(source)).toEqual(['pg.Client', 'Worker', 'Worker.prototype.run'])
  })
})
