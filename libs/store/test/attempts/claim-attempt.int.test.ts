import { describe, expect, test } from '@baton/testing'
import { claimAttempt, claimAttempts } from '../../src/attempts/claim-attempt.ts'
import { accept, transitions } from '../support/attempts.ts'

describe('claimAttempt / claimAttempts', () => {
  test('two claimers racing for one attempt: exactly one claims it', async ({ db }) => {
    const { attemptId } = await accept(db)
    const results = await Promise.all(
      ['w1', 'w2', 'w3'].map((ownerId) =>
        claimAttempt(db, { attemptId, ownerId, leaseTtlMs: 10_000 }),
      ),
    )
    expect(results.filter((r) => r.kind === 'claimed')).toHaveLength(1)
    expect(results.filter((r) => r.kind === 'held')).toHaveLength(2)
    expect(await transitions(db, attemptId)).toEqual(['accepted@0', 'claimed@1'])
  })

  test('a batched claim that names one attempt twice claims it once', async ({ db }) => {
    const { attemptId } = await accept(db)
    const other = await accept(db)
    const outcomes = await claimAttempts(db, {
      ownerId: 'w1',
      leaseTtlMs: 10_000,
      attemptIds: [attemptId, other.attemptId, attemptId],
    })
    expect(outcomes.map((o) => o.kind)).toEqual(['claimed', 'claimed', 'held'])
    expect(await transitions(db, attemptId)).toEqual(['accepted@0', 'claimed@1'])
  })

  test('a claim whose lease would already be expired is rejected and writes nothing', async ({
    db,
  }) => {
    const { attemptId } = await accept(db)
    await expect(claimAttempt(db, { attemptId, ownerId: 'w1', leaseTtlMs: 0 })).rejects.toThrow(
      RangeError,
    )
    expect(await transitions(db, attemptId)).toEqual(['accepted@0'])
  })
})
