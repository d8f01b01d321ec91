import { randomUUID } from 'node:crypto'
import { describe, expect, test } from '@baton/testing'
import { claimAttempt } from '../../src/attempts/claim-attempt.ts'
import { getAttempt, getAttempts } from '../../src/attempts/get-attempt.ts'
import { accept } from '../support/attempts.ts'

describe('getAttempts', () => {
  test('one id and many ids read the same records; a missing id is absent', async ({ db }) => {
    const queued = await accept(db)
    const running = await accept(db)
    await claimAttempt(db, { attemptId: running.attemptId, ownerId: 'w1', leaseTtlMs: 10_000 })
    const missing = randomUUID()

    const many = await getAttempts(db, [queued.attemptId, running.attemptId, missing])
    expect([...many.keys()].sort()).toEqual([queued.attemptId, running.attemptId].sort())
    expect(many.get(running.attemptId)).toMatchObject({ status: 'running' })
    for (const id of [queued.attemptId, running.attemptId]) {
      expect((await getAttempts(db, [id])).get(id)).toEqual(many.get(id))
    }
    expect((await getAttempts(db, [missing])).size).toBe(0)
    expect(await getAttempt(db, missing)).toBeUndefined()
  })
})
