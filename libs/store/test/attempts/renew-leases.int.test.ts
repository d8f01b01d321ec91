import { setTimeout as sleep } from 'node:timers/promises'
import { describe, expect, test } from '@baton/testing'
import { commitTerminal } from '../../src/attempts/commit-terminal.ts'
import { getAttempt } from '../../src/attempts/get-attempt.ts'
import { renewLeases } from '../../src/attempts/renew-leases.ts'
import { requestCancel } from '../../src/attempts/request-cancel.ts'
import {
  findUndeliveredSteering,
  markSteeringDelivered,
  recordSteering,
} from '../../src/attempts/steering.ts'
import { acceptClaimed, done } from '../support/attempts.ts'

describe('renewLeases', () => {
  test('an expired owner cannot heartbeat, commit or mark steering delivered, and writes nothing', async ({
    db,
  }) => {
    const { attemptId, claim } = await acceptClaimed(db, 100)
    const gen = claim.attempt.ownerGeneration
    await recordSteering(db, { attemptId, content: [{ type: 'text', text: 'too late' }] })
    await sleep(200)
    expect(
      await markSteeringDelivered(db, {
        attemptId,
        ownerId: 'w1',
        ownerGeneration: gen,
        throughSequence: 1,
      }),
    ).toBe(0)
    expect(await findUndeliveredSteering(db, { attemptId, afterSequence: 0 })).toHaveLength(1)
    const renewals = await renewLeases(db, {
      ownerId: 'w1',
      leases: [{ attemptId, ownerGeneration: gen }],
      leaseTtlMs: 10_000,
    })
    expect(renewals).toEqual([
      { attemptId, status: 'lost', cancelRequested: false, steeringPending: false },
    ])
    expect(
      await commitTerminal(db, { attemptId, ownerId: 'w1', ownerGeneration: gen, result: done }),
    ).toBe('lease_lost')
    expect((await getAttempt(db, attemptId))?.status).toBe('running')
  })

  test('a lease that cannot name a held attempt is answered lost alone; every other lease renews', async ({
    db,
  }) => {
    const leases = []
    for (let i = 0; i < 5; i += 1) {
      const { attemptId, claim } = await acceptClaimed(db, 10_000)
      leases.push({ attemptId, ownerGeneration: claim.attempt.ownerGeneration })
    }
    // What the statement's casts would refuse: not a uuid, and generations outside `int`.
    const poisoned = [
      { attemptId: 'not-a-uuid', ownerGeneration: 1 },
      { attemptId: leases[0]!.attemptId, ownerGeneration: 1.5 },
      { attemptId: leases[1]!.attemptId, ownerGeneration: 2 ** 31 },
    ]
    const renewals = await renewLeases(db, {
      ownerId: 'w1',
      leases: [...leases.slice(0, 2), ...poisoned, ...leases.slice(2)],
      leaseTtlMs: 10_000,
    })
    expect(renewals.map((r) => r.status)).toEqual([
      'renewed',
      'renewed',
      'lost',
      'lost',
      'lost',
      'renewed',
      'renewed',
      'renewed',
    ])
    expect(
      await renewLeases(db, { ownerId: 'w1', leases: poisoned.slice(0, 1), leaseTtlMs: 10_000 }),
    ).toEqual([
      { attemptId: 'not-a-uuid', status: 'lost', cancelRequested: false, steeringPending: false },
    ])
  })

  test('a live lease is renewed and reports a pending cancel request', async ({ db }) => {
    const { attemptId, claim } = await acceptClaimed(db, 10_000)
    const lease = { attemptId, ownerGeneration: claim.attempt.ownerGeneration }
    expect(await renewLeases(db, { ownerId: 'w1', leases: [lease], leaseTtlMs: 10_000 })).toEqual([
      { attemptId, status: 'renewed', cancelRequested: false, steeringPending: false },
    ])
    expect(await requestCancel(db, { attemptId, reason: 'user' })).toEqual({
      kind: 'cancel_requested',
    })
    expect(await renewLeases(db, { ownerId: 'w1', leases: [lease], leaseTtlMs: 10_000 })).toEqual([
      { attemptId, status: 'renewed', cancelRequested: true, steeringPending: false },
    ])
    // Another owner (or an old generation) renews nothing.
    expect(
      await renewLeases(db, { ownerId: 'w2', leases: [lease], leaseTtlMs: 10_000 }),
    ).toMatchObject([{ status: 'lost' }])
  })
})
