// A TypeScript block, as a host application would hold it: written to a file inside the repository
// (in the git-ignored `.baton/`, so `@baton/client` and `@baton/contracts` resolve as they do for
// the repository's own code), type-checked with the repository's compiler settings, then run by
// Node against the live system, bounded in time. It runs in a temporary working directory, so
// nothing it writes lands in the repository.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { REPO_ROOT } from '@baton/testing/processes'
import type { LiveSystem } from './live-system.ts'
import { forTheLiveSystem, runBounded, sampleEnv } from './samples.ts'

const TSC = createRequire(import.meta.url).resolve('typescript/bin/tsc')

/** Throws with the compiler's or the program's output unless the sample compiles and exits 0. */
export async function runTypeScriptSample(
  body: string,
  system: LiveSystem,
  timeoutMs: number,
): Promise<void> {
  const samples = join(REPO_ROOT, '.baton', 'docs-samples')
  mkdirSync(samples, { recursive: true })
  const dir = mkdtempSync(join(samples, 'sample-'))
  const cwd = mkdtempSync(join(tmpdir(), 'baton-docs-ts-'))
  try {
    const file = join(dir, 'sample.ts')
    writeFileSync(file, forTheLiveSystem(body, system))
    writeFileSync(
      join(dir, 'tsconfig.json'),
      JSON.stringify({ extends: join(REPO_ROOT, 'tsconfig.base.json'), include: [file] }),
    )
    const env = sampleEnv(system)
    const checked = await runBounded(process.execPath, [TSC, '-p', dir], { cwd, env, timeoutMs })
    if (checked.code !== 0) throw new Error(`the sample does not type-check:\n${checked.output}`)
    const ran = await runBounded(process.execPath, [file], { cwd, env, timeoutMs })
    if (ran.code !== 0) {
      throw new Error(`the sample exited ${String(ran.code)}; its output:\n${ran.output}`)
    }
  } finally {
    rmSync(dir, { recursive: true, force: true })
    rmSync(cwd, { recursive: true, force: true })
  }
}
