import { randomUUID } from 'node:crypto'
import { describe, expect, test } from '@baton/testing'
import { claimAttempts } from '../../src/attempts/claim-attempt.ts'
import { NS, delegateFrom, finish, sessionWithRun } from '../support/continuations.ts'
import { sessionBudgetUse } from '../../src/runs/hosted-runs.ts'
import {
  commitTerminal,
  commitTerminals,
  commitTerminalsReturning,
} from '../../src/attempts/commit-terminal.ts'
import { getAttempt } from '../../src/attempts/get-attempt.ts'
import { acceptClaimed, accept, transitions, done } from '../support/attempts.ts'

describe('commitTerminal / commitTerminals', () => {
  test('a duplicate commit is replayed; a different commit after terminal is refused', async ({
    db,
  }) => {
    const { attemptId, claim } = await acceptClaimed(db, 10_000)
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

  test('a commit answers each attempt as it left it, the record a read returns; none with a parent run (its parent session instead) or when it did not apply', async ({
    db,
  }) => {
    const inline = await accept(db)
    const large = await accept(db)
    const [ci, cl] = await claimAttempts(db, {
      ownerId: 'w1',
      leaseTtlMs: 10_000,
      attemptIds: [inline.attemptId, large.attemptId],
    })
    if (ci?.kind !== 'claimed' || cl?.kind !== 'claimed') throw new Error('not claimed')
    const parent = await sessionWithRun(db)
    const parented = await delegateFrom(db, parent)
    const fence = { ownerId: 'w1', ownerGeneration: 1 }
    const answers = await commitTerminalsReturning(db, [
      { ...fence, attemptId: inline.attemptId, result: done },
      // Above the inline bound: stored in an artifact, in a transaction of its own.
      { ...fence, attemptId: large.attemptId, result: { ...done, output: 'x'.repeat(10_000) } },
      {
        attemptId: parented.attemptId,
        ownerId: 'worker',
        ownerGeneration: parented.generation,
        result: done,
      },
      { ...fence, attemptId: randomUUID(), result: done },
    ])
    expect(answers.map((a) => a.outcome)).toEqual([
      'committed',
      'committed',
      'committed',
      'missing',
    ])
    expect(answers[0]?.record).toEqual(await getAttempt(db, inline.attemptId))
    expect(answers[1]?.record).toEqual(await getAttempt(db, large.attemptId))
    expect(answers[1]?.record?.artifact).not.toBeNull()
    // Its delivery is written by a trigger of the commit, which the commit's own read cannot see.
    expect((await getAttempt(db, parented.attemptId))?.delivery).not.toBeNull()
    // Instead it names the session whose claims may now have something to take.
    expect(answers[2]).toEqual({
      outcome: 'committed',
      parentSession: { namespaceId: 'default', sessionId: parent.sessionId },
    })
    expect(answers[3]).toEqual({ outcome: 'missing' })
    // A retry after a lost answer is replayed and reads nothing back.
    expect(
      await commitTerminalsReturning(db, [{ ...fence, attemptId: inline.attemptId, result: done }]),
    ).toEqual([{ outcome: 'replayed' }])
  })

  test("a child's tokens are stored by the commit that applies: a replayed commit adds nothing, whatever tokens it reports", async ({
    db,
  }) => {
    const parent = await sessionWithRun(db)
    const a = await delegateFrom(db, parent)
    const b = await delegateFrom(db, parent)
    const spent = (usageTokens: number) => ({ ...done, usageTokens })
    expect(await finish(db, a, spent(120))).toBe('committed')
    // The worker lost the answer and commits again: the same projection, replayed.
    expect(await finish(db, a, spent(120))).toBe('replayed')
    expect(await finish(db, a, spent(999))).toBe('replayed')
    const session = { namespaceId: NS, sessionId: parent.sessionId, runId: parent.runId }
    expect(await sessionBudgetUse(db, session)).toMatchObject({ running: 1, childTokens: 120 })
    expect(await finish(db, b, spent(30))).toBe('committed')
    expect(await finish(db, b, spent(30))).toBe('replayed')
    expect(await sessionBudgetUse(db, session)).toEqual({
      profile: null,
      ofRun: 2,
      running: 0,
      childTokens: 150,
      depth: 1,
    })
  })
})
