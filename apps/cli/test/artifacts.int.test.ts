// `baton artifacts get` against a real API and worker: an output above the inline bound is kept in
// an artifact, and the CLI hands back its exact bytes, or says why it cannot.
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { randomUUID } from 'node:crypto'
import { sql } from 'kysely'
import type { TerminalAttemptView } from '@baton/contracts'
import { describe, expect } from '@baton/testing'
import { baton, cliTest, expectExits, SLOW_CLI } from './support/cli-harness.ts'

/** One unit of the output: 1-, 2-, 3- and 4-byte UTF-8 characters and a newline. */
const UNIT = 'Grüße, 世界 — €😀 ok\n'
const REPEATS = 20_000
/** The child's output: `UNIT` repeated (the script repeats its output to exactly this length). */
const OUTPUT = UNIT.repeat(REPEATS)
const OUTPUT_BYTES = Buffer.from(OUTPUT)

const withDir = cliTest.extend<{ dir: string }>({
  // eslint-disable-next-line no-empty-pattern -- vitest fixtures take their dependencies first
  dir: async ({}, use) => {
    const dir = await mkdtemp(join(tmpdir(), 'baton-cli-'))
    await use(dir)
    await rm(dir, { recursive: true, force: true })
  },
})

describe('baton artifacts get', () => {
  withDir(
    'a large multi-byte output round-trips byte for byte to a file and to stdout; --json prints its metadata; each failure has its exit code',
    SLOW_CLI,
    async ({ stack, db, dir }) => {
      const script = JSON.stringify({ output: UNIT, outputBytes: OUTPUT.length })
      const done = await baton(
        stack.base,
        'delegate',
        'scripted',
        script,
        '--wait',
        '30s',
        '--json',
      )
      expect(done.code, done.stderr).toBe(0)
      const view = JSON.parse(done.stdout) as TerminalAttemptView
      // Above the inline bound: the view holds a preview, the artifact the whole output.
      expect(view.outputTruncated).toBe(true)
      expect(view.outputBytes).toBe(OUTPUT_BYTES.length)
      expect(OUTPUT_BYTES.length).toBeGreaterThan(400_000)
      const artifactId = view.artifact?.artifactId ?? 'none'
      expect(view.artifact?.bytes).toBe(OUTPUT_BYTES.length)

      const shown = await baton(stack.base, 'attempts', 'show', view.attemptId)
      expect(shown.stdout).toMatch(new RegExp(`\nartifact +${artifactId}\noutput +Grüße`))

      const file = join(dir, 'out.txt')
      const saved = await baton(stack.base, 'artifacts', 'get', artifactId, '-o', file)
      expect(saved.code, saved.stderr).toBe(0)
      expect((await readFile(file)).equals(OUTPUT_BYTES)).toBe(true)
      expect(saved.stdout).toContain(`bytes       ${OUTPUT_BYTES.length}\n`)
      expect(saved.stdout).toContain(`digest      ${view.digest}\n`)

      const piped = await baton(stack.base, 'artifacts', 'get', artifactId)
      expect(piped.code, piped.stderr).toBe(0)
      expect(piped.stdoutBytes.length).toBe(OUTPUT_BYTES.length)
      expect(piped.stdoutBytes.equals(OUTPUT_BYTES)).toBe(true)
      expect(piped.stderr).toBe('')

      const other = join(dir, 'again.txt')
      const json = await baton(stack.base, 'artifacts', 'get', artifactId, '-o', other, '--json')
      expect(json.code, json.stderr).toBe(0)
      expect(JSON.parse(json.stdout)).toEqual({
        artifactId,
        bytes: OUTPUT_BYTES.length,
        digest: view.digest,
        file: other,
      })
      expect((await readFile(other)).equals(OUTPUT_BYTES)).toBe(true)
      const verified = await baton(stack.base, 'artifacts', 'get', artifactId, '--json')
      expect(JSON.parse(verified.stdout)).toMatchObject({ artifactId, file: null })

      const unwritten = join(dir, 'never.txt')
      await expectExits(stack.base, [
        {
          args: ['artifacts', 'get', randomUUID()],
          code: 3,
          stderr: /ARTIFACT_NOT_FOUND \(HTTP 404\): no artifact/,
        },
        {
          args: ['artifacts', 'get', artifactId, '-o', join(dir, 'no-such-dir', 'out.txt')],
          code: 7,
          stderr: /cannot write .*no-such-dir\/out\.txt: ENOENT/,
        },
        { args: ['artifacts', 'get'], code: 2, stderr: /missing required argument 'artifactId'/ },
      ])

      // Stored bytes that no longer match their digest are never handed out.
      await sql`update artifact_chunks set content = ${Buffer.from('tampered')} where upload_id = (select upload_id from artifacts where id = ${artifactId}::uuid)`.execute(
        db,
      )
      await expectExits(stack.base, [
        {
          args: ['artifacts', 'get', artifactId, '-o', unwritten],
          code: 6,
          stderr: /ARTIFACT_INTEGRITY \(HTTP 500\)/,
        },
      ])
      await expect(readFile(unwritten)).rejects.toThrow(/ENOENT/)

      // Past its retention the content is gone; the API says so with 410.
      await sql`update artifacts set expires_at = now() - interval '1 second' where id = ${artifactId}::uuid`.execute(
        db,
      )
      await expectExits(stack.base, [
        {
          args: ['artifacts', 'get', artifactId, '--json'],
          code: 3,
          stderr: /ARTIFACT_EXPIRED \(HTTP 410\): the artifact expired/,
        },
      ])
    },
  )
})
