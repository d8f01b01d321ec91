import { describe, expect, test } from 'vitest'
import { REPO_ROOT } from '@baton/testing/processes'
import { checkArchitecture, type SourceFile } from './check-architecture.ts'

const file = (path: string, packageName: string, imports: string[]): SourceFile => ({
  path: `${REPO_ROOT}${path}`,
  packageName,
  imports,
})

describe('the architecture check', () => {
  test('finds an import circle, type-only imports included', () => {
    const problems = checkArchitecture([
      file('apps/api/src/deps.ts', '@baton/api', ['./services/commands.ts', '@baton/store']),
      file('apps/api/src/services/commands.ts', '@baton/api', ['../deps.ts']),
      file('apps/api/src/main.ts', '@baton/api', ['./deps.ts']),
    ])
    expect(problems).toEqual([
      'import circle: apps/api/src/services/commands.ts → apps/api/src/deps.ts → apps/api/src/services/commands.ts',
    ])
  })

  test('refuses an import up the floors, across one floor, or of the dev-only testing library', () => {
    const problems = checkArchitecture([
      file('libs/store/src/a.ts', '@baton/store', [
        '@baton/api',
        '@baton/queue',
        '@baton/contracts',
      ]),
      file('libs/queue/src/b.ts', '@baton/queue', ['@baton/testing']),
      file('apps/cli/src/c.ts', '@baton/cli', ['@baton/client', '@baton/worker']),
    ])
    expect(problems).toEqual([
      'libs/store/src/a.ts: @baton/store (floor 2) imports @baton/api (floor 4)',
      'libs/store/src/a.ts: @baton/store (floor 2) imports @baton/queue (floor 2)',
      'libs/queue/src/b.ts: production code imports the dev-only @baton/testing',
      'apps/cli/src/c.ts: @baton/cli (floor 4) imports @baton/worker (floor 4)',
    ])
  })
})
