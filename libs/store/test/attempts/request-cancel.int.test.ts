import { randomUUID } from 'node:crypto'
import { sql } from 'kysely'
import { describe, expect, test } from '@baton/testing'
import { claimAttempt } from '../../src/attempts/claim-attempt.ts'
import { getAttempt } from '../../src/attempts/get-attempt.ts'
import { requestCancel, requestCancels } from '../../src/attempts/request-cancel.ts'
import { buildTerminalProjection } from '../../src/attempts/terminal-record.ts'
import { acceptDelegations } from '../../src/attempts/accept-delegations.ts'
import { claimAttempts } from '../../src/attempts/claim-attempt.ts'
import { accept, scriptedDelegation, transitions } from '../support/attempts.ts'

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

  test('one batched statement answers each request: queued, running, terminal, missing and repeats', async ({
    db,
  }) => {
    const queued = await accept(db)
    const running = await accept(db)
    const done = await accept(db)
    const missing = randomUUID()
    await claimAttempt(db, { attemptId: running.attemptId, ownerId: 'w1', leaseTtlMs: 10_000 })
    await requestCancel(db, { attemptId: done.attemptId, reason: null })
    const outcomes = await requestCancels(db, [
      { attemptId: queued.attemptId, reason: 'first' },
      { attemptId: running.attemptId, reason: 'user' },
      { attemptId: done.attemptId, reason: null },
      { attemptId: missing, reason: null },
      { attemptId: queued.attemptId, reason: 'second' },
      { attemptId: running.attemptId, reason: 'again' },
    ])
    expect(outcomes.map((o) => o.kind)).toEqual([
      'cancelled_queued',
      'cancel_requested',
      'terminal',
      'missing',
      'terminal',
      'cancel_requested',
    ])
    expect(await getAttempt(db, queued.attemptId)).toMatchObject({
      status: 'terminal',
      stopReason: 'aborted',
      failureCategory: 'cancelled',
    })
    expect(await getAttempt(db, running.attemptId)).toMatchObject({ status: 'running' })
    // One audit row per attempt, whatever the repeats.
    expect(await transitions(db, queued.attemptId)).toEqual(['accepted@0', 'cancelled_queued@0'])
    expect(await transitions(db, running.attemptId)).toEqual([
      'accepted@0',
      'claimed@1',
      'cancel_requested@1',
    ])
    const reasons = await sql<{ id: string; cancel_reason: string | null }>`
      select id, cancel_reason from attempts where id = any(${[queued.attemptId, running.attemptId]}::uuid[])
    `.execute(db)
    expect(Object.fromEntries(reasons.rows.map((r) => [r.id, r.cancel_reason]))).toEqual({
      [queued.attemptId]: 'first',
      [running.attemptId]: 'user',
    })
    expect(await requestCancels(db, [])).toEqual([])
  })

  test('a burst of cancels of many running and queued attempts: each running one flagged, each queued one ended with its trace in its fingerprint', async ({
    db,
  }) => {
    const inputs = Array.from({ length: 40 }, (_, i) => ({
      ...scriptedDelegation('burst'),
      metadata: { traceId: `trace-${i}` },
    }))
    await acceptDelegations(db, inputs)
    const ids = inputs.map((input) => input.attemptId)
    // The even ones run; the odd ones stay queued.
    const running = ids.filter((_, i) => i % 2 === 0)
    const queued = ids.filter((_, i) => i % 2 === 1)
    const claims = await claimAttempts(db, {
      ownerId: 'w1',
      leaseTtlMs: 10_000,
      attemptIds: running,
    })
    expect(claims.map((c) => c.kind)).toEqual(running.map(() => 'claimed'))
    const outcomes = await requestCancels(
      db,
      ids.map((attemptId) => ({ attemptId, reason: 'burst' })),
    )
    expect(outcomes.map((o) => o.kind)).toEqual(
      ids.map((_, i) => (i % 2 === 0 ? 'cancel_requested' : 'cancelled_queued')),
    )
    const rows = await sql<{ id: string; status: string; fingerprint: string | null }>`
      select id, status, fingerprint from attempts where id = any(${ids}::uuid[])
    `.execute(db)
    const byId = new Map(rows.rows.map((r) => [r.id, r]))
    for (const attemptId of running) {
      expect(byId.get(attemptId)).toMatchObject({ status: 'running', fingerprint: null })
      expect(await transitions(db, attemptId)).toEqual([
        'accepted@0',
        'claimed@1',
        'cancel_requested@1',
      ])
    }
    for (const attemptId of queued) {
      const traceId = `trace-${ids.indexOf(attemptId)}`
      const { fingerprint } = buildTerminalProjection(
        attemptId,
        0,
        { stopReason: 'aborted', output: '', failureCategory: 'cancelled' },
        { traceId },
      )
      expect(byId.get(attemptId)).toMatchObject({ status: 'terminal', fingerprint })
    }
  })
})
