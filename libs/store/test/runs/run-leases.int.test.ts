import { randomUUID } from 'node:crypto'
import { sql } from 'kysely'
import { continuationDigest } from '@baton/contracts'
import { describe, expect, test } from '@baton/testing'
import type { Db } from '../../src/db.ts'
import { claimContinuation } from '../../src/continuations/claim-continuation.ts'
import { getContinuation } from '../../src/continuations/get-continuation.ts'
import { reconcileDeliveries } from '../../src/continuations/reconcile-deliveries.ts'
import { abandonExpiredRuns } from '../../src/runs/abandon-runs.ts'
import { createRun } from '../../src/runs/create-run.ts'
import { endRun } from '../../src/runs/end-run.ts'
import { getRun } from '../../src/runs/get-run.ts'
import { renewRunLease } from '../../src/runs/renew-run-lease.ts'
import {
  NS,
  delegateFrom,
  expireClaim,
  explicitRun,
  finish,
  pendingContinuation,
  runsOf,
  sessionWithRun,
} from '../support/continuations.ts'

/** Moves a host run's lease into the past, as a host that stopped renewing it would leave it. */
async function expireRunLease(db: Db, runId: string): Promise<void> {
  await sql`
    update runs set lease_expires_at = now() - interval '1 second' where id = ${runId}::uuid
  `.execute(db)
}

/** The sweep's moves, as attempt and action. */
async function sweep(db: Db, unclaimedAfterMs?: number) {
  const outcomes = await reconcileDeliveries(db, {
    due: true,
    limit: 100,
    ...(unclaimedAfterMs === undefined ? {} : { unclaimedAfterMs }),
  })
  return outcomes.map(({ attemptId, action }) => ({ attemptId, action }))
}

const claimOf = (db: Db, sessionId: string, claimToken: string) =>
  claimContinuation(db, { namespaceId: NS, sessionId, claimToken, leaseMs: 60_000 })

/** A result suppressed after its consumer failed: what an explicit run may consume. */
async function suppressedResult(db: Db) {
  const { parent, child } = await pendingContinuation(db)
  const claim = await claimOf(db, parent.sessionId, 'consumer')
  if (claim === undefined) throw new Error('no continuation to claim')
  await endRun(db, { namespaceId: NS, runId: claim.runId, status: 'failed', fence: claim.fence })
  return { parent, child }
}

describe('host runs carry a lease', () => {
  test('renewed while live; once expired it can neither be renewed nor ended and is abandoned, its held result becoming a continuation delivered once', async ({
    db,
  }) => {
    const parent = await sessionWithRun(db)
    const child = await delegateFrom(db, parent)
    await finish(db, child)
    expect(await getContinuation(db, NS, { attemptId: child.attemptId })).toMatchObject({
      state: 'held',
      consumerRunId: parent.runId,
    })
    const before = (await getRun(db, NS, parent.runId))?.leaseExpiresAt
    const renewed = await renewRunLease(db, {
      namespaceId: NS,
      runId: parent.runId,
      leaseMs: 120_000,
    })
    expect(renewed.kind === 'renewed' && renewed.leaseExpiresAt > (before ?? new Date())).toBe(true)
    // A claim's fence does not renew a host run.
    expect(
      await renewRunLease(db, {
        namespaceId: NS,
        runId: parent.runId,
        fence: { claimToken: 'x', generation: 1 },
        leaseMs: 1000,
      }),
    ).toEqual({ kind: 'stale_claim' })

    await expireRunLease(db, parent.runId)
    const late = await renewRunLease(db, { namespaceId: NS, runId: parent.runId, leaseMs: 1000 })
    expect(late).toMatchObject({ kind: 'not_active', run: { status: 'abandoned' } })
    expect(
      await endRun(db, { namespaceId: NS, runId: parent.runId, status: 'completed' }),
    ).toMatchObject({ kind: 'not_active', run: { status: 'abandoned' } })
    const admitted = await getContinuation(db, NS, { attemptId: child.attemptId })
    expect(admitted).toMatchObject({ state: 'pending' })
    expect(admitted?.consumerRunId).not.toBe(parent.runId)

    const claim = await claimOf(db, parent.sessionId, 'next')
    expect(claim).toMatchObject({ attemptId: child.attemptId, receipt: admitted?.receipt })
    expect(await claimOf(db, parent.sessionId, 'another')).toBeUndefined()
    const runs = await runsOf(db, parent.sessionId)
    expect(runs.filter((r) => r.trigger_type === 'async_subagent_result')).toHaveLength(1)
  })

  test("the sweep abandons expired host runs; an explicit run's results are suppressed again, with their reason, and consumed once by another", async ({
    db,
  }) => {
    const { parent, child } = await suppressedResult(db)
    const explicit = randomUUID()
    const created = await createRun(db, {
      namespaceId: NS,
      sessionId: parent.sessionId,
      runId: explicit,
      consume: [child.attemptId],
      leaseMs: 60_000,
    })
    expect(created.kind).toBe('created')
    expect(await abandonExpiredRuns(db, { limit: 10 })).toEqual({ runs: [], deliveries: [] })
    await expireRunLease(db, explicit)
    const abandoned = await abandonExpiredRuns(db, { limit: 10 })
    expect(abandoned.runs.map((r) => [r.id, r.status])).toEqual([[explicit, 'abandoned']])
    expect(abandoned.deliveries).toEqual([
      {
        attemptId: child.attemptId,
        action: 'released',
        namespaceId: NS,
        sessionId: parent.sessionId,
      },
    ])
    expect(await getContinuation(db, NS, { attemptId: child.attemptId })).toMatchObject({
      state: 'suppressed',
      suppressionReason: 'consumer_failed',
    })
    const again = await explicitRun(db, parent.sessionId, [child.attemptId])
    expect(again.kind).toBe('created')
    const refused = await explicitRun(db, parent.sessionId, [child.attemptId])
    expect(refused).toEqual({ kind: 'not_consumable', attemptIds: [child.attemptId] })
  })
})

describe('every consumption answers its receipt', () => {
  test('a held result consumed by its run, and a suppressed one taken by an explicit run, come with their receipt, stored input and content; a replay answers the same', async ({
    db,
  }) => {
    const parent = await sessionWithRun(db)
    const child = await delegateFrom(db, parent)
    await finish(db, child, {
      stopReason: 'completed',
      output: 'held answer',
      failureCategory: null,
    })
    const ended = await endRun(db, {
      namespaceId: NS,
      runId: parent.runId,
      status: 'completed',
      consumed: [child.attemptId],
    })
    const stored = await getContinuation(db, NS, { attemptId: child.attemptId })
    const delivered = {
      attemptId: child.attemptId,
      receipt: stored?.receipt,
      input: stored?.input,
      content: { kind: 'inline', text: 'held answer' },
    }
    expect(ended).toMatchObject({ kind: 'ended', consumed: [delivered] })
    expect(JSON.parse(stored?.receipt ?? '').inputDigest).toBe(
      continuationDigest(stored?.input ?? ''),
    )
    expect(
      await endRun(db, {
        namespaceId: NS,
        runId: parent.runId,
        status: 'completed',
        consumed: [child.attemptId],
      }),
    ).toMatchObject({ kind: 'replayed', consumed: [delivered] })

    const suppressed = await suppressedResult(db)
    const explicit = await explicitRun(db, suppressed.parent.sessionId, [
      suppressed.child.attemptId,
    ])
    const record = await getContinuation(db, NS, { attemptId: suppressed.child.attemptId })
    expect(explicit).toMatchObject({
      kind: 'created',
      consumed: [
        {
          attemptId: suppressed.child.attemptId,
          receipt: record?.receipt,
          input: record?.input,
          content: { kind: 'inline', text: 'result' },
        },
      ],
    })
  })
})

describe('the sweep', () => {
  test('takes lapsed claims oldest deadline first, and claims it would only retain never fill a batch', async ({
    db,
  }) => {
    const parent = await sessionWithRun(db)
    const children = []
    for (let i = 0; i < 4; i += 1) children.push(await delegateFrom(db, parent))
    await endRun(db, { namespaceId: NS, runId: parent.runId, status: 'completed' })
    for (const child of children) await finish(db, child)
    const claims = []
    for (let i = 0; i < 4; i += 1) {
      const claim = await claimOf(db, parent.sessionId, `c${i}`)
      if (claim === undefined) throw new Error('no continuation to claim')
      claims.push(claim)
    }
    // Claims 0 and 1: past their deadline but under a live lease (retained); 2 and 3: lapsed,
    // 3's deadline older than 2's.
    for (const [i, seconds] of [
      [0, 30],
      [1, 20],
      [2, 5],
      [3, 10],
    ] as const) {
      await sql`
        update continuations set claim_deadline = now() - ${seconds} * interval '1 second'
        where attempt_id = ${claims[i]?.attemptId}::uuid
      `.execute(db)
    }
    for (const i of [2, 3]) await expireClaim(db, claims[i]?.runId ?? '')
    await sql`
      update continuations set claim_deadline = now() - interval '10 seconds'
      where attempt_id = ${claims[3]?.attemptId}::uuid
    `.execute(db)
    const first = await reconcileDeliveries(db, { due: true, limit: 1 })
    expect(first.map((o) => [o.attemptId, o.action])).toEqual([[claims[3]?.attemptId, 'released']])
    const second = await reconcileDeliveries(db, { due: true, limit: 1 })
    expect(second.map((o) => [o.attemptId, o.action])).toEqual([[claims[2]?.attemptId, 'released']])
    expect(await reconcileDeliveries(db, { due: true, limit: 1 })).toEqual([])
    for (const claim of [claims[0], claims[1]])
      expect(await getContinuation(db, NS, { attemptId: claim?.attemptId ?? '' })).toMatchObject({
        state: 'claimed',
      })
    for (const claim of claims.slice(0, 2))
      await endRun(db, {
        namespaceId: NS,
        runId: claim.runId,
        status: 'completed',
        fence: claim.fence,
      })
    for (let i = 0; i < 2; i += 1) {
      const claim = await claimOf(db, parent.sessionId, `again${i}`)
      if (claim === undefined) throw new Error('no continuation to claim')
      await endRun(db, {
        namespaceId: NS,
        runId: claim.runId,
        status: 'completed',
        fence: claim.fence,
      })
    }
  })

  test('a continuation nobody claims is suppressed unclaimed after the setting, its run cancelled and its evidence kept; an explicit run may still consume it', async ({
    db,
  }) => {
    const { parent, child } = await pendingContinuation(db)
    const pending = await getContinuation(db, NS, { attemptId: child.attemptId })
    expect(pending?.state).toBe('pending')
    const hour = 60 * 60 * 1000
    expect(await sweep(db, hour)).toEqual([])
    expect(await sweep(db)).toEqual([])
    await sql`
      update continuations set admitted_at = admitted_at - interval '2 hours'
      where attempt_id = ${child.attemptId}::uuid
    `.execute(db)
    await sql`
      update runs set created_at = created_at - interval '2 hours'
      where id = ${pending?.consumerRunId ?? ''}::uuid
    `.execute(db)
    // Without the setting (a claim's or a run's own reconciliation) nothing expires.
    expect(await sweep(db)).toEqual([])
    expect(await sweep(db, hour)).toEqual([{ attemptId: child.attemptId, action: 'suppressed' }])
    const suppressed = await getContinuation(db, NS, { attemptId: child.attemptId })
    expect(suppressed).toMatchObject({
      state: 'suppressed',
      suppressionReason: 'unclaimed',
      suppressionRunId: pending?.consumerRunId,
      input: pending?.input,
      receipt: pending?.receipt,
    })
    expect(await getRun(db, NS, pending?.consumerRunId ?? '')).toMatchObject({
      status: 'cancelled',
    })
    expect(await claimOf(db, parent.sessionId, 'late')).toBeUndefined()
    const explicit = await explicitRun(db, parent.sessionId, [child.attemptId])
    expect(explicit.kind).toBe('created')
  })
})
