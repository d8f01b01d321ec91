import { randomUUID } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import { sql } from 'kysely'
import { describe, expect, test } from '@baton/testing'
import type { Db } from '../db.ts'
import { claimAttempt, claimAttempts } from './claim-attempt.ts'
import { commitTerminal, commitTerminals } from './commit-terminal.ts'
import { getAttempt } from './get-attempt.ts'
import { commitProcessLoss, findExpiredRunning } from './reconcile-process-loss.ts'
import { renewLeases } from './renew-leases.ts'
import { requestCancel } from './request-cancel.ts'
import { findUndeliveredSteering, markSteeringDelivered, recordSteering } from './steering.ts'
import { acceptScripted } from './test-support.ts'

function accept(db: Db, agentId?: string) {
  return acceptScripted(db, 'session-1', agentId)
}

async function transitions(db: Db, attemptId: string) {
  const r = await sql<{ event: string; owner_generation: number }>`
    select event, owner_generation from attempt_transitions where attempt_id = ${attemptId} order by id
  `.execute(db)
  return r.rows.map((x) => `${x.event}@${x.owner_generation}`)
}

const done = { stopReason: 'completed', output: 'done', failureCategory: null }

describe('attempt ledger', () => {
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

  test('an expired owner cannot heartbeat or commit, and writes nothing', async ({ db }) => {
    const { attemptId } = await accept(db)
    const claim = await claimAttempt(db, { attemptId, ownerId: 'w1', leaseTtlMs: 100 })
    if (claim.kind !== 'claimed') throw new Error(claim.kind)
    const gen = claim.attempt.ownerGeneration
    await sleep(200)
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

  test('a live lease is renewed and reports a pending cancel request', async ({ db }) => {
    const { attemptId } = await accept(db)
    const claim = await claimAttempt(db, { attemptId, ownerId: 'w1', leaseTtlMs: 10_000 })
    if (claim.kind !== 'claimed') throw new Error(claim.kind)
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

  test('process loss is recorded once, with the commit fingerprint rules, and a late result is refused', async ({
    db,
  }) => {
    const { attemptId } = await accept(db)
    const claim = await claimAttempt(db, { attemptId, ownerId: 'w1', leaseTtlMs: 50 })
    if (claim.kind !== 'claimed') throw new Error(claim.kind)
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
    expect([...(first ?? []), ...(second ?? [])]).toEqual([attemptId])
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
    const { attemptId } = await accept(db)
    const claim = await claimAttempt(db, { attemptId, ownerId: 'w1', leaseTtlMs: 10_000 })
    if (claim.kind !== 'claimed') throw new Error(claim.kind)
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

  test('a claim whose lease would already be expired is rejected and writes nothing', async ({
    db,
  }) => {
    const { attemptId } = await accept(db)
    await expect(claimAttempt(db, { attemptId, ownerId: 'w1', leaseTtlMs: 0 })).rejects.toThrow(
      RangeError,
    )
    expect(await transitions(db, attemptId)).toEqual(['accepted@0'])
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
