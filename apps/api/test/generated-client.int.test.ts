// An integrator's view of the contract: generate TypeScript types from the served OpenAPI document
// with openapi-typescript, write a small program against them (openapi-fetch), type-check it with
// tsc, and run it against the live API. A field the document does not define must not compile.
import { execFile } from 'node:child_process'
import { mkdtemp, rm, symlink, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import openapiTS, { astToString } from 'openapi-typescript'
import { describe, expect, test } from '@baton/testing'
import { REPO_ROOT } from '@baton/testing/processes'

const run = promisify(execFile)

/**
 * The program an integrator writes: delegate, wait once, read the terminal view. Every type it
 * uses comes from the generated `paths`; the assignments pin the unions the document promises.
 */
// It starts on its own line so that scripts/check-deps.ts sees the import the program makes.
const PROGRAM = `
import createClient from 'openapi-fetch'
import type { paths } from './baton-api.ts'

const client = createClient<paths>({
  baseUrl: process.env.BATON_URL ?? '',
  headers: { authorization: \`Bearer \${process.env.BATON_API_KEY ?? ''}\` },
})

const delegated = await client.POST('/v1/sessions/{sessionId}/delegations', {
  params: { path: { sessionId: 'generated-client' }, header: { 'idempotency-key': 'generated-1' } },
  body: { name: 'scripted', prompt: '{"output":"typed result"}' },
})
if (delegated.error !== undefined) throw new Error(delegated.error.error.code)
const attemptId: string = delegated.data.attemptId

const waited = await client.GET('/v1/attempts/{attemptId}/wait', {
  params: { path: { attemptId }, query: { timeoutMs: '20000' } },
})
if (waited.error !== undefined) {
  const code: 'UNAUTHORIZED' | 'RATE_LIMITED' | 'NOT_READY' | 'INTERNAL' | 'VALIDATION_FAILED'
    | 'URI_TOO_LONG' | 'ATTEMPT_NOT_FOUND' = waited.error.error.code
  throw new Error(code)
}
const view = waited.data
if (view.status !== 'terminal') throw new Error(\`still \${view.status}\`)
const stopReason: 'completed' | 'aborted' | 'error' | 'max-tokens' | 'refusal' = view.stopReason
const output: string = view.output
const outputBytes: number = view.outputBytes
const artifactId: string | undefined = view.artifact?.artifactId
const failure: string | null = view.failureCategory
console.log(JSON.stringify({ status: view.status, stopReason, output, outputBytes, artifactId, failure }))
`

const TSCONFIG = {
  compilerOptions: {
    target: 'ES2024',
    lib: ['ES2024'],
    module: 'NodeNext',
    moduleResolution: 'NodeNext',
    types: ['node'],
    strict: true,
    noUncheckedIndexedAccess: true,
    exactOptionalPropertyTypes: true,
    allowImportingTsExtensions: true,
    verbatimModuleSyntax: true,
    noEmit: true,
    skipLibCheck: true,
  },
  include: ['*.ts'],
}

/** tsc over the directory: its exit code and what it printed. */
async function typeCheck(dir: string): Promise<{ code: number; output: string }> {
  const tsc = join(REPO_ROOT, 'node_modules', 'typescript', 'bin', 'tsc')
  try {
    const { stdout } = await run(process.execPath, [tsc, '-p', join(dir, 'tsconfig.json')])
    return { code: 0, output: stdout }
  } catch (error) {
    const failed = error as { code?: number; stdout?: string }
    return { code: failed.code ?? 1, output: failed.stdout ?? String(error) }
  }
}

describe('a client generated from the served document', () => {
  test(
    'openapi-typescript types from /docs/json type-check a delegate → wait → terminal view program, which runs against the live API; a field the view does not have does not compile',
    { timeout: 120_000 },
    async ({ baton }) => {
      const h = await baton()
      const docs = await fetch(`${h.base}/docs/json`, { headers: h.auth })
      expect(docs.status).toBe(200)
      const types = astToString(
        await openapiTS((await docs.json()) as Parameters<typeof openapiTS>[0]),
      )

      const dir = await mkdtemp(join(tmpdir(), 'baton-generated-client-'))
      try {
        // The program resolves openapi-fetch and @types/node from the repository's node_modules.
        await symlink(join(REPO_ROOT, 'node_modules'), join(dir, 'node_modules'), 'dir')
        await writeFile(join(dir, 'package.json'), JSON.stringify({ type: 'module' }))
        await writeFile(join(dir, 'tsconfig.json'), JSON.stringify(TSCONFIG))
        await writeFile(join(dir, 'baton-api.ts'), types)
        await writeFile(join(dir, 'program.ts'), PROGRAM)

        const checked = await typeCheck(dir)
        expect(checked.output).toBe('')
        expect(checked.code).toBe(0)

        const { stdout } = await run(process.execPath, [join(dir, 'program.ts')], {
          env: { ...process.env, BATON_URL: h.base, BATON_API_KEY: h.key },
        })
        expect(JSON.parse(stdout)).toEqual({
          status: 'terminal',
          stopReason: 'completed',
          output: 'typed result',
          outputBytes: 12,
          failure: null,
        })

        // Reading a field the terminal view does not have is a compile error, not an undefined.
        await writeFile(join(dir, 'program.ts'), `${PROGRAM}console.log(view.result)\n`)
        const broken = await typeCheck(dir)
        expect(broken.code).not.toBe(0)
        expect(broken.output).toMatch(/program\.ts.*error TS2339: Property 'result' does not exist/)
      } finally {
        await rm(dir, { recursive: true, force: true })
      }
    },
  )
})
