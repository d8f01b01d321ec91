import { randomUUID } from 'node:crypto'
import { describe, expect, test } from '@baton/testing'
import { claimAttempt } from './claim-attempt.ts'
import { getAttempt } from './get-attempt.ts'
import { requestCancel } from './request-cancel.ts'
import { accept } from './test-support.ts'

describe('requestCancel', () => {
  test('cancel of a queued attempt commits aborted directly and it can never be claimed', async ({
    db,
  }) => {
    const { attemptId } = await accept(db)
    expect(await requestCancel(db, { attemptId, reason: null })).toEqual({
      kind: 'cancelled_queued',
    })
    expect(await getAttempt(db, attemptId)).toMatchObject({
      status: 'terminal',
      stopReason: 'aborted',
    })
    expect((await claimAttempt(db, { attemptId, ownerId: 'w1', leaseTtlMs: 1000 })).kind).toBe(
      'terminal',
    )
    expect(await requestCancel(db, { attemptId, reason: null })).toEqual({ kind: 'terminal' })
    expect(await requestCancel(db, { attemptId: randomUUID(), reason: null })).toEqual({
      kind: 'missing',
    })
  })
})
