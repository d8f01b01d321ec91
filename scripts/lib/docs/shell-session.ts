// A documentation file's shell blocks, run as a reader runs them in one terminal: in document
// order, in one working directory, each block seeing the shell variables the earlier ones set.
//
// Each block runs in a fresh `bash` with `set -euo pipefail`, so it fails on the first command
// that fails. Before the block, bash sources the variables the file's earlier blocks left; after
// it, every variable the block's shell holds beyond a fresh shell's is saved with `declare -p`
// (variables only; functions are not carried over). The working directory is a temporary one of
// the file's own, removed afterwards, so samples leave no file in the repository.
import { execFileSync } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { REPO_ROOT } from '@baton/testing/processes'
import type { LiveSystem } from './live-system.ts'
import { forTheLiveSystem, runBounded, sampleEnv } from './samples.ts'

/** How a reader runs the repository's scripts (the CLI among them) from the checkout. */
export const READER_NPM_RUN = 'npm run -s '

export interface ShellSession {
  /** Runs one block; throws with its output unless it exits 0 within `timeoutMs`. */
  run(body: string, timeoutMs: number): Promise<void>
  close(): void
}

export function createShellSession(system: LiveSystem): ShellSession {
  const dir = mkdtempSync(join(tmpdir(), 'baton-docs-sh-'))
  const env = sampleEnv(system)
  const state = join(dir, '.state')
  const base = join(dir, '.base')
  writeFileSync(state, '')
  // The variables of a fresh shell with this environment: they are not the samples' to carry.
  writeFileSync(base, execFileSync('bash', ['-c', 'compgen -v'], { env, encoding: 'utf8' }))
  const script = join(dir, '.block.sh')
  return {
    async run(body, timeoutMs) {
      writeFileSync(script, shellScript(forReaderShell(body, system), state, base))
      const done = await runBounded('bash', [script], { cwd: dir, env, timeoutMs })
      if (done.code !== 0) {
        throw new Error(`the block exited ${String(done.code)}; its output:\n${done.output}`)
      }
    },
    close: () => rmSync(dir, { recursive: true, force: true }),
  }
}

/**
 * The block as the runner runs it: the API's address is the live one, and the repository's
 * scripts (the CLI among them) run from the checkout (`npm run` finds the repository's
 * package.json through `--prefix`, as it finds it in the working directory of a reader in the
 * checkout).
 */
function forReaderShell(body: string, system: LiveSystem): string {
  const quotedRoot = `'${REPO_ROOT.replaceAll("'", `'\\''`)}'`
  return forTheLiveSystem(body, system).replaceAll(
    READER_NPM_RUN,
    `npm --prefix ${quotedRoot} run -s `,
  )
}

function shellScript(body: string, state: string, base: string): string {
  return [
    'set -euo pipefail',
    `source '${state}'`,
    body,
    // Save what this block's shell holds beyond a fresh one (bash's own variables excepted).
    `declare -A __fresh=(); while read -r __v; do __fresh[$__v]=1; done < '${base}'`,
    `for __v in $(compgen -v); do`,
    `  case $__v in __* | BASH* | REPLY | MAPFILE | COPROC* | PIPESTATUS) continue ;; esac`,
    `  [[ -n \${__fresh[$__v]+set} ]] || declare -p "$__v"`,
    `done > '${state}'`,
    '',
  ].join('\n')
}
