import { setTimeout as sleep } from 'node:timers/promises'
import { describe, expect, test } from '@baton/testing'
import { claimAttempt } from '../../src/attempts/claim-attempt.ts'
import { commitTerminal } from '../../src/attempts/commit-terminal.ts'
import { getAttempt } from '../../src/attempts/get-attempt.ts'
import { commitProcessLoss, findExpiredRunning } from '../../src/attempts/reconcile-process-loss.ts'
import { acceptClaimed, accept, transitions, done } from '../support/attempts.ts'

describe('findExpiredRunning / commitProcessLoss', () => {
  test('process loss is recorded once, with the commit fingerprint rules, and a late result is refused', async ({
    db,
  }) => {
    const { attemptId, claim } = await acceptClaimed(db, 50)
    await sleep(100)
    // (Other tests in this file leave expired leases too: look at this attempt only.)
    const expired = (await findExpiredRunning(db, { limit: 100 })).filter(
      (e) => e.attemptId === attemptId,
    )
    expect(expired).toEqual([{ attemptId, ownerGeneration: claim.attempt.ownerGeneration }])
    const [first, second] = await Promise.all([
      commitProcessLoss(db, expired),
      commitProcessLoss(db, expired),
    ])
    expect([...(first ?? []), ...(second ?? [])]).toEqual([
      { attemptId, session: { namespaceId: 'default', sessionId: 'session-1' } },
    ])
    expect(await getAttempt(db, attemptId)).toMatchObject({
      status: 'terminal',
      stopReason: 'error',
      failureCategory: 'process_lost',
    })
    expect(
      await commitTerminal(db, {
        attemptId,
        ownerId: 'w1',
        ownerGeneration: claim.attempt.ownerGeneration,
        result: done,
      }),
    ).toBe('refused')
    // A redelivered job for it is acknowledged without running.
    expect((await claimAttempt(db, { attemptId, ownerId: 'w2', leaseTtlMs: 1000 })).kind).toBe(
      'terminal',
    )
    expect(await transitions(db, attemptId)).toEqual(['accepted@0', 'claimed@1', 'process_lost@1'])
  })

  test('a live foreign lease is preserved: reconciliation never touches it', async ({ db }) => {
    const { attemptId } = await accept(db)
    await claimAttempt(db, { attemptId, ownerId: 'other-host', leaseTtlMs: 60_000 })
    const expired = await findExpiredRunning(db, { limit: 1000 })
    expect(expired.map((e) => e.attemptId)).not.toContain(attemptId)
    expect(await commitProcessLoss(db, [{ attemptId, ownerGeneration: 1 }])).toEqual([])
    expect(await getAttempt(db, attemptId)).toMatchObject({ status: 'running' })
  })
})
