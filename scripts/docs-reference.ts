// `npm run docs:reference -- <document> [output]`: the static API reference, one self-contained
// HTML file (Redoc, built by Redocly's CLI), of an OpenAPI document given as a file or a URL such
// as http://127.0.0.1:3000/docs/json (fetched with the namespace key in BATON_API_KEY). It is
// written to docs/reference/index.html unless an output is named. Starts nothing; needs no network
// beyond the URL: Redocly's telemetry and update check are off and the page embeds its scripts.
import { spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { REPO_ROOT } from '@baton/testing/processes'

const [source, output = join(REPO_ROOT, 'docs', 'reference', 'index.html')] = process.argv.slice(2)
if (source === undefined) {
  console.error('usage: npm run docs:reference -- <OpenAPI file or URL> [output .html]')
  process.exit(2)
}
// Paths are the caller's: npm runs scripts in the repository root.
const here = process.env.INIT_CWD ?? process.cwd()
const dir = mkdtempSync(join(tmpdir(), 'baton-reference-'))
try {
  const built = spawnSync(
    join(REPO_ROOT, 'node_modules', '.bin', 'redocly'),
    ['build-docs', await documentFile(source), '--output', resolve(here, output), '--inlineBundle'],
    {
      stdio: 'inherit',
      env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' },
    },
  )
  process.exitCode = built.status ?? 1
} catch (error) {
  console.error(`docs:reference: ${(error as Error).message}`)
  process.exitCode = 1
} finally {
  rmSync(dir, { recursive: true, force: true })
}

/** The document's file: the file named, or the URL's answer written to the temporary directory. */
async function documentFile(source: string): Promise<string> {
  if (!/^https?:\/\//.test(source)) return resolve(here, source)
  const key = process.env.BATON_API_KEY ?? ''
  const answer = await fetch(source, {
    headers: key === '' ? {} : { authorization: `Bearer ${key}` },
  })
  if (!answer.ok) {
    const hint = answer.status === 401 ? ': set BATON_API_KEY to a namespace key' : ''
    throw new Error(`GET ${source} answered ${answer.status}${hint}`)
  }
  const file = join(dir, 'baton-api.json')
  writeFileSync(file, await answer.text())
  return file
}
