// The documentation's shape, and the docs runner's own rules (scripts/docs.int.test.ts runs every
// block against a live system): README.md is a user's guide of at most 300 lines, no line of it
// or of docs/ is wider than 100 columns, and every relative link resolves, anchors included.
import { readFileSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, test } from 'vitest'
import { REPO_ROOT } from '@baton/testing/processes'
import { documentationFiles, extractBlocks, readInfo } from './lib/docs/blocks.ts'
import { anchorsOf, checkLinks, slug } from './lib/docs/links.ts'
import { checkMarkedBlock } from './lib/docs/markers.ts'

const read = (file: string): string => readFileSync(join(REPO_ROOT, file), 'utf8')
const docsPages = readdirSync(join(REPO_ROOT, 'docs'))
  .filter((name) => name.endsWith('.md'))
  .map((name) => `docs/${name}`)

describe('the documentation', () => {
  test('README.md is a user guide of at most 300 lines', () => {
    expect(read('README.md').trimEnd().split('\n').length).toBeLessThanOrEqual(300)
  })

  test('no line of README.md or docs/ is wider than 100 columns', () => {
    const wide = ['README.md', ...docsPages].flatMap((file) =>
      read(file)
        .split('\n')
        .flatMap((line, i) => ([...line].length > 100 ? [`${file}:${i + 1}`] : [])),
    )
    expect(wide).toEqual([])
  })

  test('every relative link names an existing file, and an anchor a heading of that page', () => {
    const problems = documentationFiles().flatMap((file) => checkLinks(file))
    expect(problems.map((p) => `${p.file}:${p.line} ${p.target}: ${p.problem}`)).toEqual([])
  })
})

describe('the docs runner', () => {
  test('reads a language and at most one known attribute, and refuses anything else', () => {
    expect(readInfo('sh')).toEqual({ language: 'sh' })
    expect(readInfo('sh check=ci')).toEqual({ language: 'sh', marker: 'ci' })
    expect(readInfo('json schema=scripted-script')).toEqual({
      language: 'json',
      schema: 'scripted-script',
    })
    for (const refused of ['', 'console', 'js', 'sh check=skip', 'ts check=ci', 'sh a=b c=d'])
      expect(readInfo(refused), refused).toHaveProperty('problem')
  })

  test('finds fences inside list items, and reports one left open', () => {
    const found = extractBlocks('x.md', '- item\n\n  ```sh\n  echo hi\n  ```\n\n```ts\nopen')
    expect(found.blocks).toMatchObject([{ line: 3, language: 'sh', body: 'echo hi' }])
    expect(found.problems).toMatchObject([{ line: 7, problem: 'unclosed code fence' }])
  })

  test('slugs headings as GitHub does', () => {
    expect(slug('The `scripted` subagent')).toBe('the-scripted-subagent')
    expect(slug('Keys, namespaces and rate limits')).toBe('keys-namespaces-and-rate-limits')
    expect([...anchorsOf('# A\n## A\n```sh\n# not a heading\n```\n')]).toEqual(['a', 'a-1'])
  })

  test('each marker checks its block: up, ci, compose and bench refuse what they do not run', () => {
    expect(checkMarkedBlock('up', 'PORT=3001 npm run up   # another port')).toEqual([])
    expect(checkMarkedBlock('up', 'NO_SUCH_SETTING=1 npm run up')).toHaveLength(1)
    expect(checkMarkedBlock('up', 'PORT=http npm run up')).toHaveLength(1)
    expect(checkMarkedBlock('up', 'npm run bench')).toHaveLength(1)
    expect(checkMarkedBlock('ci', 'npm install-test')).toEqual([])
    expect(checkMarkedBlock('ci', 'npm test')).toHaveLength(1)
    const compose = 'docker compose -f infra/docker-compose.yml'
    expect(checkMarkedBlock('compose', `${compose} up -d --scale worker=4 redis`)).toEqual([])
    expect(checkMarkedBlock('compose', `${compose} up -d jaeger`)).toHaveLength(1)
    expect(checkMarkedBlock('compose', `${compose} logs -f --scale nope=2`)).toHaveLength(1)
    expect(checkMarkedBlock('compose', 'export BATON_API_PORT=3001')).toEqual([])
    expect(checkMarkedBlock('compose', 'export NOT_IN_COMPOSE=1')).toHaveLength(1)
    expect(checkMarkedBlock('compose', 'docker run redis')).toHaveLength(1)
    expect(
      checkMarkedBlock('bench', 'npm run -s bench -- --rounds 5 --systems naive,baton'),
    ).toEqual([])
    expect(checkMarkedBlock('bench', 'npm run bench')).toEqual([])
    expect(checkMarkedBlock('bench', 'npm run bench -- --warmup 10')).toHaveLength(1)
    expect(checkMarkedBlock('bench', 'npm run bench -- --systems floor')).toHaveLength(1)
    expect(checkMarkedBlock('bench', 'npm run bench:rounds')).toHaveLength(1)
  })
})
