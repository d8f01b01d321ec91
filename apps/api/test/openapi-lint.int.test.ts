// Integrators' tools over the served OpenAPI document: Redocly's `recommended` rules and Spectral's
// `spectral:oas` find no error and no warning in it beyond the few accepted below, and the static
// reference `npm run docs:reference` builds from it names every operation. Both CLIs run from the
// repository's node_modules/.bin, with Redocly's telemetry and update check off: no network.
import { execFile } from 'node:child_process'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { describe, expect } from '@baton/testing'
import { REPO_ROOT } from '@baton/testing/processes'
import { apiTest } from './support/api-harness.ts'

const run = promisify(execFile)

/** Why the probes list no 4xx: 408 and 431 may answer any request (info.description). */
const PROBE = 'a probe takes no input and no key, so it has no 4xx answer of its own'

/**
 * Findings accepted, as `<linter> <rule> <where>`, each with why the document does not follow the
 * rule there. Any other finding fails the test, and so does an entry that no longer fires.
 */
const ACCEPTED: Readonly<Record<string, string>> = {
  'redocly operation-4xx-response #/paths/~1healthz/get/responses': PROBE,
  'redocly operation-4xx-response #/paths/~1readyz/get/responses': PROBE,
}

/** A command run in `cwd`: its exit code and output (a linter exits 1 on findings). */
async function command(
  cwd: string,
  file: string,
  args: readonly string[],
): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(file, args, {
      cwd,
      env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' },
      maxBuffer: 64 * 1024 * 1024,
    })
    return { code: 0, stdout, stderr }
  } catch (error) {
    const failed = error as { code?: number; stdout?: string; stderr?: string }
    return { code: failed.code ?? 1, stdout: failed.stdout ?? '', stderr: failed.stderr ?? '' }
  }
}

const bin = (name: string): string => join(REPO_ROOT, 'node_modules', '.bin', name)

interface RedoclyReport {
  readonly totals: { readonly errors: number; readonly warnings: number }
  readonly problems: readonly {
    readonly ruleId: string
    readonly severity: 'error' | 'warn'
    readonly location: readonly { readonly pointer: string }[]
  }[]
}

interface SpectralResult {
  readonly code: string | number
  /** 0 error, 1 warning, 2 information, 3 hint. */
  readonly severity: number
  readonly path: readonly string[]
}

interface Document {
  readonly tags: readonly { readonly name: string }[]
  readonly paths: Record<string, Record<string, { readonly operationId: string }>>
}

describe('the served OpenAPI document, as integrators lint and render it', () => {
  apiTest(
    'Redocly (recommended) and Spectral (spectral:oas) find nothing but the accepted; the reference names every operation',
    { timeout: 120_000 },
    async ({ api: h }) => {
      const docs = await fetch(`${h.base}/docs/json`, { headers: h.auth })
      expect(docs.status).toBe(200)
      const text = await docs.text()
      const doc = JSON.parse(text) as Document

      const dir = await mkdtemp(join(tmpdir(), 'baton-openapi-lint-'))
      try {
        const document = join(dir, 'baton-api.json')
        await writeFile(document, text)

        const redocly = await command(dir, bin('redocly'), [
          'lint',
          document,
          '--extends=recommended',
          '--format=json',
        ])
        const report = JSON.parse(redocly.stdout) as RedoclyReport
        const ruleset = join(dir, 'ruleset.json')
        await writeFile(ruleset, JSON.stringify({ extends: ['spectral:oas'] }))
        const results = join(dir, 'spectral.json')
        const spectral = await command(dir, bin('spectral'), [
          'lint',
          document,
          `--ruleset=${ruleset}`,
          '--format=json',
          `--output=${results}`,
          '--fail-severity=warn',
        ])
        expect(spectral.stderr).toBe('')
        const findings = [
          ...report.problems.map((p) => `redocly ${p.ruleId} ${p.location[0]?.pointer ?? ''}`),
          ...(JSON.parse(await readFile(results, 'utf8')) as SpectralResult[])
            .filter((r) => r.severity <= 1)
            .map((r) => `spectral ${r.code} #/${r.path.join('/')}`),
        ]
        expect(findings.filter((f) => ACCEPTED[f] === undefined)).toEqual([])
        expect(Object.keys(ACCEPTED).filter((f) => !findings.includes(f))).toEqual([])
        expect(report.totals.errors).toBe(0)
        expect(redocly.code).toBe(0)

        const html = join(dir, 'reference.html')
        const built = await command(dir, process.execPath, [
          join(REPO_ROOT, 'scripts', 'docs-reference.ts'),
          document,
          html,
        ])
        expect(built.code, built.stderr).toBe(0)
        const page = await readFile(html, 'utf8')
        const operationIds = Object.values(doc.paths).flatMap((operations) =>
          Object.values(operations).map((operation) => operation.operationId),
        )
        expect(operationIds.length).toBeGreaterThan(20)
        expect(operationIds.filter((id) => !page.includes(`"operationId":"${id}"`))).toEqual([])
        expect(doc.tags.filter((tag) => !page.includes(`>${tag.name}<`))).toEqual([])
        // Self-contained: the page loads no script from elsewhere (Redoc's CDN).
        expect(page).not.toMatch(/(?:src|href)="https?:[^"]*\.js"|from\s*"https?:/)
      } finally {
        await rm(dir, { recursive: true, force: true })
      }
    },
  )
})
