// Every code block of README.md, docs/*.md and the packages' READMEs, checked against a live
// system: the one `npm run up` starts, run here as a reader runs it (PORT=0, a BATON_DEV_DIR of its
// own, this file's database and the test Redis), from the URL and keys it prints.
//
// Rules of the runner (scripts/lib/docs/):
// - A block's info string is its language and at most one attribute, from closed sets; anything
//   else (no language, an unknown one, an unknown attribute) fails, so no block is skipped.
// - `sh`/`bash` run in bash (`set -euo pipefail`), in document order, one session per file: each
//   block starts from the shell variables the file's earlier blocks left, in a temporary working
//   directory of the file's own. Their environment holds BATON_URL, BATON_API_KEY, BATON_ADMIN_KEY
//   and BATON_DEV_DIR, as a reader exports them after `npm run up`.
// - `ts` is type-checked with the repository's settings, then run by Node (bounded in time).
// - `json` is parsed; `json schema=<name>` is also validated by the schema Baton reads it with.
// - `markdown` is a subagent spec: parsed by Baton's spec parser and runnable in the catalog.
// - `text` is a diagram, not code.
// - `sh check=<marker>` is not run; its check stands in: `up` (npm run up with variables up or
//   the apps read: this test started the system with that command), `ci` (a command .ci/run runs
//   verbatim), `compose` (docker compose naming only services of infra/docker-compose.yml).
// Substitutions: samples say `http://127.0.0.1:3000` (what a reader types); the runner puts the
// live URL there. `npm run -s baton --` runs from the checkout (`npm --prefix <repo>`).
// A sample asserts what it claims (`curl --fail-with-body`, `jq -e`, `test`, `assert`), and leaves
// no file in the repository (the last test compares `git status` before and after).
import { execFileSync } from 'node:child_process'
import { chmodSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, inject } from 'vitest'
import { describe, expect, test } from '@baton/testing'
import { REPO_ROOT } from '@baton/testing/processes'
import { allBlocks, documentationFiles, where, type DocBlock } from './lib/docs/blocks.ts'
import { startLiveSystem, type LiveSystem } from './lib/docs/live-system.ts'
import { checkMarkedBlock } from './lib/docs/markers.ts'
import { createShellSession, type ShellSession } from './lib/docs/shell-session.ts'
import { checkJsonBlock, checkMarkdownBlock } from './lib/docs/static-checks.ts'
import { runTypeScriptSample } from './lib/docs/typescript-sample.ts'

const SAMPLE_TIMEOUT_MS = 90_000
const UP_TIMEOUT_MS = 120_000

const docsTest = test.extend<{ live: LiveSystem }>({
  live: [
    async ({ fileDatabase, fileQueuePrefix }, use) => {
      const devDir = mkdtempSync(join(tmpdir(), 'baton-docs-up-'))
      // up may run its own servers as an unprivileged user, who must reach the directory.
      chmodSync(devDir, 0o755)
      const system = await startLiveSystem(
        {
          PORT: '0',
          BATON_DEV_DIR: devDir,
          DATABASE_URL: fileDatabase.url,
          REDIS_URL: inject('redisUrl'),
          QUEUE_PREFIX: fileQueuePrefix,
          // Other checkouts test on this machine: no worker takes a fixed metrics port.
          METRICS_PORT: '0',
          LOG_LEVEL: 'warn',
        },
        UP_TIMEOUT_MS,
      )
      try {
        await use(system)
      } finally {
        await system.stop()
        rmSync(devDir, { recursive: true, force: true })
      }
    },
    { scope: 'file' },
  ],
})

const { blocks, problems } = allBlocks()
/** The working tree as git sees it (ignored files aside): samples must leave it as it was. */
const worktree = (): string =>
  execFileSync('git', ['status', '--porcelain', '--untracked-files=all'], {
    cwd: REPO_ROOT,
    encoding: 'utf8',
  })
const worktreeBefore = worktree()

test('every code block has a language the runner checks, and a known marker or schema', () => {
  expect(problems.map((p) => `${where(p)}: ${p.problem}`)).toEqual([])
})

for (const file of documentationFiles()) {
  const inFile = blocks.filter((block) => block.file === file)
  if (inFile.length === 0) continue
  describe(file, () => {
    let shell: ShellSession | undefined
    afterAll(() => shell?.close())
    for (const block of inFile) {
      docsTest(
        `${where(block)} ${block.info}`,
        { timeout: UP_TIMEOUT_MS + SAMPLE_TIMEOUT_MS },
        async ({ live }) => {
          shell ??= createShellSession(live)
          await check(block, live, shell)
        },
      )
    }
  })
}

test('the samples left no file behind in the repository', () => {
  expect(worktree()).toBe(worktreeBefore)
})

async function check(block: DocBlock, live: LiveSystem, shell: ShellSession): Promise<void> {
  switch (block.language) {
    case 'sh':
    case 'bash':
      if (block.marker !== undefined) expect(checkMarkedBlock(block.marker, block.body)).toEqual([])
      else await shell.run(block.body, SAMPLE_TIMEOUT_MS)
      return
    case 'ts':
      await runTypeScriptSample(block.body, live, SAMPLE_TIMEOUT_MS)
      return
    case 'json':
      await checkJsonBlock(block)
      return
    case 'markdown':
      checkMarkdownBlock(block)
      return
    case 'text':
      return // a diagram
    default: {
      const unknown: never = block.language
      throw new Error(`no checker for ${String(unknown)}`)
    }
  }
}
