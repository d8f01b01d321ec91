import { WORKSPACE_TOOLS } from '@baton/subagents'
import { describe, expect, it } from 'vitest'
import { createWorkspaceTools } from './workspace-tools.ts'

describe('workspace tools offered to children', () => {
  it('are exactly the tools the subagent catalog judges specs against', () => {
    // The catalog refuses a spec at accept time by these names; a tool added or renamed here
    // without the catalog would refuse runnable specs or admit ones no worker can serve.
    const implemented = Object.keys(createWorkspaceTools({ cwd: process.cwd() })).sort()
    expect(implemented).toEqual(WORKSPACE_TOOLS.map((tool) => tool.name).sort())
  })
})
