import { describe, expect, it } from 'vitest'
import {
  childDepthFields,
  deriveChildDepth,
  readDelegationDepth,
  resumedChildDepth,
} from './delegation-depth.ts'
import type { Agent } from './types.ts'

function agent(delegationDepth?: number, subagentDepth?: number): Agent {
  return {
    session: {
      id: 's',
      header: { id: 's', cwd: '/', ...(delegationDepth === undefined ? {} : { delegationDepth }) },
    },
    options: subagentDepth === undefined ? {} : { subagentDepth },
  }
}

function codeOf(fn: () => unknown): string | undefined {
  try {
    fn()
  } catch (error) {
    return (error as { code?: string }).code
  }
  return undefined
}

describe('delegation depth', () => {
  it('treats an absent durable and runtime depth as zero', () => {
    expect(readDelegationDepth(agent())).toBe(0)
  })

  it('takes the greater of the durable header depth and the runtime option depth', () => {
    expect(readDelegationDepth(agent(3, 1))).toBe(3)
    expect(readDelegationDepth(agent(1, 4))).toBe(4)
    expect(readDelegationDepth(agent(undefined, 2))).toBe(2)
  })

  it('gives a child its parent depth plus one', () => {
    expect(deriveChildDepth(agent(2, 1))).toBe(3)
    expect(childDepthFields(3)).toEqual({ delegationDepth: 3, subagentDepth: 3 })
  })

  it('never lets a resumed child lower its recorded depth', () => {
    // Durable header says 3; a stale runtime option of 1 and a shallow parent cannot lower it.
    expect(resumedChildDepth(agent(3, 1), agent(0))).toBe(3)
    // But a deeper resuming parent raises it to parent + 1.
    expect(resumedChildDepth(agent(1), agent(4))).toBe(5)
  })

  it('rejects a derived depth outside the safe-integer domain', () => {
    expect(codeOf(() => deriveChildDepth(agent(Number.MAX_SAFE_INTEGER)))).toBe('INVALID_DEPTH')
    expect(codeOf(() => readDelegationDepth(agent(-1)))).toBe('INVALID_DEPTH')
    expect(codeOf(() => readDelegationDepth(agent(undefined, 0.5)))).toBe('INVALID_DEPTH')
  })

  it('rejects a derived depth above maxDepth and accepts one equal to it', () => {
    expect(codeOf(() => deriveChildDepth(agent(2), 2))).toBe('DEPTH_EXCEEDED')
    expect(deriveChildDepth(agent(1), 2)).toBe(2)
  })

  it('requires maxDepth itself to be a non-negative safe integer', () => {
    for (const maxDepth of [-1, 2.5, Infinity, Number.NaN, 2 ** 53]) {
      expect(codeOf(() => deriveChildDepth(agent(), maxDepth))).toBe('INVALID_DEPTH')
    }
    expect(codeOf(() => deriveChildDepth(agent(), 0))).toBe('DEPTH_EXCEEDED')
  })
})
