import { randomUUID } from 'node:crypto'
import { describe, expect, test } from '@baton/testing'
import { requestCancel } from './request-cancel.ts'
import { accept } from './test-support.ts'

describe('acceptDelegation', () => {
  test('one non-terminal attempt per agent: a continuation waits for terminal', async ({ db }) => {
    const first = await accept(db)
    if (first.outcome.kind !== 'accepted') throw new Error(first.outcome.kind)
    const agentId = first.outcome.agentId
    expect((await accept(db, agentId)).outcome.kind).toBe('agent_busy')
    expect((await accept(db, randomUUID())).outcome.kind).toBe('agent_not_found')
    await requestCancel(db, { attemptId: first.attemptId, reason: null })
    const continuation = await accept(db, agentId)
    expect(continuation.outcome).toMatchObject({ kind: 'accepted', agentId })
    expect(continuation.attemptId).not.toBe(first.attemptId)
  })
})
