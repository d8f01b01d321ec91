import { randomUUID } from 'node:crypto'
import { describe, expect, test } from '@baton/testing'
import { renewLeases } from '../../src/attempts/renew-leases.ts'
import { requestCancel } from '../../src/attempts/request-cancel.ts'
import {
  findUndeliveredSteering,
  markSteeringDelivered,
  recordSteering,
} from '../../src/attempts/steering.ts'
import { acceptClaimed, accept } from '../support/attempts.ts'

describe('recordSteering / findUndeliveredSteering / markSteeringDelivered', () => {
  test('steering: concurrent messages get distinct gap-free sequences; terminal and missing attempts refuse', async ({
    db,
  }) => {
    const { attemptId } = await accept(db)
    const outcomes = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        recordSteering(db, { attemptId, content: [{ type: 'text', text: `m${i}` }] }),
      ),
    )
    const sequences = outcomes
      .map((o) => (o.kind === 'recorded' ? o.sequence : -1))
      .sort((a, b) => a - b)
    expect(sequences).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10])
    expect(await recordSteering(db, { attemptId: randomUUID(), content: [] })).toEqual({
      kind: 'missing',
    })
    await requestCancel(db, { attemptId, reason: null })
    expect(await recordSteering(db, { attemptId, content: [] })).toEqual({ kind: 'terminal' })
  })

  test('steering: delivery marks are fenced by ownership, and heartbeats report pending messages', async ({
    db,
  }) => {
    const { attemptId, claim } = await acceptClaimed(db, 10_000)
    const lease = { attemptId, ownerGeneration: claim.attempt.ownerGeneration }
    await recordSteering(db, { attemptId, content: [{ type: 'text', text: 'go left' }] })
    await recordSteering(db, { attemptId, content: [{ type: 'text', text: 'now right' }] })
    expect(
      await renewLeases(db, { ownerId: 'w1', leases: [lease], leaseTtlMs: 10_000 }),
    ).toMatchObject([{ status: 'renewed', steeringPending: true }])
    expect(
      (await findUndeliveredSteering(db, { attemptId, afterSequence: 0 })).map((m) => m.sequence),
    ).toEqual([1, 2])
    // A stale owner marks nothing.
    expect(
      await markSteeringDelivered(db, {
        attemptId,
        ownerId: 'w2',
        ownerGeneration: 1,
        throughSequence: 2,
      }),
    ).toBe(0)
    expect(
      await markSteeringDelivered(db, {
        attemptId,
        ownerId: 'w1',
        ownerGeneration: 1,
        throughSequence: 1,
      }),
    ).toBe(1)
    expect(
      (await findUndeliveredSteering(db, { attemptId, afterSequence: 0 })).map((m) => m.sequence),
    ).toEqual([2])
    expect(
      await markSteeringDelivered(db, {
        attemptId,
        ownerId: 'w1',
        ownerGeneration: 1,
        throughSequence: 2,
      }),
    ).toBe(1)
    expect(
      await renewLeases(db, { ownerId: 'w1', leases: [lease], leaseTtlMs: 10_000 }),
    ).toMatchObject([{ status: 'renewed', steeringPending: false }])
  })
})
