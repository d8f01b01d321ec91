import { randomUUID } from 'node:crypto'
import { describe, expect, test } from '@baton/testing'
import { claimAttempt, claimAttempts } from './claim-attempt.ts'
import { commitTerminal, commitTerminals } from './commit-terminal.ts'
import { getAttempt } from './get-attempt.ts'
import { accept, transitions, done } from './test-support.ts'

describe('commitTerminal / commitTerminals', () => {
  test('a duplicate commit is replayed; a different commit after terminal is refused', async ({
    db,
  }) => {
    const { attemptId } = await accept(db)
    const claim = await claimAttempt(db, { attemptId, ownerId: 'w1', leaseTtlMs: 10_000 })
    if (claim.kind !== 'claimed') throw new Error(claim.kind)
    const fence = { attemptId, ownerId: 'w1', ownerGeneration: claim.attempt.ownerGeneration }
    expect(await commitTerminal(db, { ...fence, result: done })).toBe('committed')
    expect(await commitTerminal(db, { ...fence, result: done })).toBe('replayed')
    expect(await commitTerminal(db, { ...fence, result: { ...done, output: 'other' } })).toBe(
      'refused',
    )
    const view = await getAttempt(db, attemptId)
    expect(view).toMatchObject({ status: 'terminal', stopReason: 'completed', output: 'done' })
    expect(await transitions(db, attemptId)).toEqual(['accepted@0', 'claimed@1', 'committed@1'])
  })

  test('a batched commit reports each attempt on its own: committed, replayed, refused, missing', async ({
    db,
  }) => {
    const a = await accept(db)
    const b = await accept(db)
    const [ca, cb] = await claimAttempts(db, {
      ownerId: 'w1',
      leaseTtlMs: 10_000,
      attemptIds: [a.attemptId, b.attemptId],
    })
    if (ca?.kind !== 'claimed' || cb?.kind !== 'claimed') throw new Error('not claimed')
    await commitTerminal(db, {
      attemptId: b.attemptId,
      ownerId: 'w1',
      ownerGeneration: 1,
      result: done,
    })
    const outcomes = await commitTerminals(db, [
      { attemptId: a.attemptId, ownerId: 'w1', ownerGeneration: 1, result: done },
      { attemptId: b.attemptId, ownerId: 'w1', ownerGeneration: 1, result: done },
      { attemptId: a.attemptId, ownerId: 'w2', ownerGeneration: 7, result: done },
      { attemptId: randomUUID(), ownerId: 'w1', ownerGeneration: 1, result: done },
    ])
    expect(outcomes).toEqual(['committed', 'replayed', 'refused', 'missing'])
    expect(await transitions(db, a.attemptId)).toEqual(['accepted@0', 'claimed@1', 'committed@1'])
  })
})
