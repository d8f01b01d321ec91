import { randomUUID } from 'node:crypto'
import { sql } from 'kysely'
import { canonicalJson, continuationDigest, FailureCategory } from '@baton/contracts'
import { describe, expect, test } from '@baton/testing'
import { acceptDelegations } from '../../src/attempts/accept-delegations.ts'
import { commitProcessLoss } from '../../src/attempts/reconcile-process-loss.ts'
import { requestCancel } from '../../src/attempts/request-cancel.ts'
import { createRun } from '../../src/runs/create-run.ts'
import { getRun } from '../../src/runs/get-run.ts'
import { settleRun } from '../../src/runs/settle-run.ts'
import {
  admitContinuations,
  durableResultInput,
} from '../../src/continuations/admit-continuation.ts'
import {
  claimContinuation,
  renewContinuationClaim,
} from '../../src/continuations/claim-continuation.ts'
import { deleteSession } from '../../src/continuations/delete-session.ts'
import { getContinuation } from '../../src/continuations/get-continuation.ts'
import { reconcileDeliveries } from '../../src/continuations/reconcile-deliveries.ts'
import {
  NS,
  continuationRows,
  delegateFrom,
  expireClaim,
  finish,
  runsOf,
  sessionWithRun,
} from '../support/continuations.ts'

describe('continuation admission', () => {
  test('an output kept in an artifact enters the canonical input whole: its exact bytes (U+0000 included), size and digest', async ({
    db,
  }) => {
    const parent = await sessionWithRun(db)
    const child = await delegateFrom(db, parent)
    await settleRun(db, { namespaceId: NS, runId: parent.runId, status: 'completed' })
    const output = `${'report line ✓\n'.repeat(2000)}\u0000 the end`
    expect(
      await finish(db, child, { stopReason: 'completed', output, failureCategory: null }),
    ).toBe('committed')
    const record = await getContinuation(db, NS, { attemptId: child.attemptId })
    const input = record?.input ?? ''
    expect(canonicalJson(JSON.parse(input))).toBe(input)
    const content = JSON.parse(input).result.content
    expect(content).toMatchObject({
      kind: 'artifact',
      bytes: Buffer.byteLength(output),
      digest: expect.stringMatching(/^baton\.result\.v1:sha256:/),
    })
    expect(Buffer.from(content.base64, 'base64').toString('utf8')).toBe(output)
    expect(record?.inputDigest).toBe(continuationDigest(input))
  })

  test('a result landing after its parent run completed admits exactly one continuation run, bound to the ledger-derived input; the parent run is unchanged', async ({
    db,
  }) => {
    const parent = await sessionWithRun(db)
    const child = await delegateFrom(db, parent)
    expect(
      (await settleRun(db, { namespaceId: NS, runId: parent.runId, status: 'completed' })).kind,
    ).toBe('settled')
    const [parentBefore] = await runsOf(db, parent.sessionId)

    const output = 'tricky "quotes" \\ \n\t\u0001 ünïcode 🎉 \u2028 end'
    expect(
      await finish(db, child, { stopReason: 'completed', output, failureCategory: null }),
    ).toBe('committed')

    const runs = await runsOf(db, parent.sessionId)
    expect(runs).toHaveLength(2)
    expect(runs.find((r) => r.id === parent.runId)).toEqual(parentBefore)
    const continuationRun = runs.find((r) => r.id !== parent.runId)
    expect(continuationRun).toMatchObject({
      trigger_type: 'async_subagent_result',
      status: 'pending',
      cause_attempt_id: child.attemptId,
    })

    const record = await getContinuation(db, NS, { attemptId: child.attemptId })
    expect(record).toMatchObject({ state: 'pending', consumerRunId: continuationRun?.id })
    const input = record?.input ?? ''
    // The store's own derivation, in RFC 8785 canonical form, carrying the complete result.
    expect(await durableResultInput(db, child.attemptId)).toBe(input)
    expect(canonicalJson(JSON.parse(input))).toBe(input)
    expect(JSON.parse(input)).toEqual({
      cause: {
        agentId: child.agentId,
        attemptId: child.attemptId,
        parentRunId: parent.runId,
        resultBytes: Buffer.byteLength(output),
        resultDigest: expect.stringMatching(/^baton\.result\.v1:sha256:/),
        sessionId: parent.sessionId,
        traceId: 'trace-1',
      },
      result: {
        content: { kind: 'inline', text: output },
        failureCategory: null,
        stopReason: 'completed',
      },
    })
    const receipt = JSON.parse(record?.receipt ?? '')
    expect(receipt.inputDigest).toBe(continuationDigest(input))
    expect(record?.inputDigest).toBe(continuationDigest(input))
    expect(receipt.inputBytes).toBe(Buffer.byteLength(input))
    expect(receipt.cause).toEqual(JSON.parse(input).cause)
  })

  test('a delegation without a parent run admits nothing', async ({ db }) => {
    const attemptId = randomUUID()
    await acceptDelegations(db, [
      {
        namespaceId: NS,
        sessionId: `s-${randomUUID()}`,
        name: 'scripted',
        prompt: 'x',
        metadata: {},
        attemptId,
        newAgentId: randomUUID(),
      },
    ])
    await requestCancel(db, { attemptId, reason: null })
    expect(await continuationRows(db, attemptId)).toEqual([])
    expect(await admitContinuations(db, [attemptId])).toEqual([undefined])
  })

  test('the same terminal event processed many times at once admits one continuation and answers byte-identical receipts', async ({
    db,
  }) => {
    const parent = await sessionWithRun(db)
    await settleRun(db, { namespaceId: NS, runId: parent.runId, status: 'completed' })
    const child = await delegateFrom(db, parent)
    const commits = await Promise.all([finish(db, child), finish(db, child), finish(db, child)])
    expect(commits.sort()).toEqual(['committed', 'replayed', 'replayed'])
    const receipts = await Promise.all(
      Array.from({ length: 8 }, () => admitContinuations(db, [child.attemptId, child.attemptId])),
    )
    const stored = (await getContinuation(db, NS, { attemptId: child.attemptId }))?.receipt
    expect(new Set(receipts.flat())).toEqual(new Set([stored]))
    const runs = await runsOf(db, parent.sessionId)
    expect(runs.filter((r) => r.trigger_type === 'async_subagent_result')).toHaveLength(1)
    // A second logical continuation is impossible even for code that tries to write one.
    await expect(
      sql`insert into continuations (attempt_id, namespace_id, session_id, parent_run_id, state, input, input_digest, receipt)
          values (${child.attemptId}::uuid, 'default', ${parent.sessionId}, ${parent.runId}::uuid, 'pending', '{}', 'd', '{}')`.execute(
        db,
      ),
    ).rejects.toMatchObject({ code: '23505' })
  })

  test('every terminal path admits: a queued cancel and a process loss', async ({ db }) => {
    const parent = await sessionWithRun(db)
    await settleRun(db, { namespaceId: NS, runId: parent.runId, status: 'completed' })
    const queuedId = randomUUID()
    await acceptDelegations(db, [
      {
        namespaceId: NS,
        sessionId: parent.sessionId,
        name: 'scripted',
        prompt: 'x',
        metadata: {},
        attemptId: queuedId,
        newAgentId: randomUUID(),
        parentRunId: parent.runId,
      },
    ])
    await requestCancel(db, { attemptId: queuedId, reason: null })
    const lost = await delegateFrom(db, parent)
    await sql`update attempts set lease_expires_at = now() - interval '1 second' where id = ${lost.attemptId}::uuid`.execute(
      db,
    )
    expect(
      await commitProcessLoss(db, [
        { attemptId: lost.attemptId, ownerGeneration: lost.generation },
      ]),
    ).toEqual([lost.attemptId])
    for (const attemptId of [queuedId, lost.attemptId])
      expect(await getContinuation(db, NS, { attemptId })).toMatchObject({ state: 'pending' })
  })

  test('a parent run of another session is refused at accept, and nothing is written', async ({
    db,
  }) => {
    const parent = await sessionWithRun(db)
    const other = await sessionWithRun(db)
    const attemptId = randomUUID()
    const [outcome] = await acceptDelegations(db, [
      {
        namespaceId: NS,
        sessionId: other.sessionId,
        name: 'scripted',
        prompt: 'x',
        metadata: {},
        attemptId,
        newAgentId: randomUUID(),
        parentRunId: parent.runId,
      },
    ])
    expect(outcome).toEqual({ kind: 'run_not_found' })
    expect(
      (await sql`select 1 from attempts where id = ${attemptId}::uuid`.execute(db)).rows,
    ).toEqual([])
  })
})

describe('held results', () => {
  test('a result landing while its parent is active is held; consumed by the parent it is delivered, else admitted when the parent completes', async ({
    db,
  }) => {
    const parent = await sessionWithRun(db)
    const consumed = await delegateFrom(db, parent)
    const left = await delegateFrom(db, parent)
    await finish(db, consumed)
    await finish(db, left)
    for (const a of [consumed, left])
      expect(await getContinuation(db, NS, { attemptId: a.attemptId })).toMatchObject({
        state: 'held',
        consumerRunId: parent.runId,
      })
    expect(
      (
        await settleRun(db, {
          namespaceId: NS,
          runId: parent.runId,
          status: 'completed',
          consumed: [consumed.attemptId],
        })
      ).kind,
    ).toBe('settled')
    expect(await getContinuation(db, NS, { attemptId: consumed.attemptId })).toMatchObject({
      state: 'delivered',
      consumerRunId: parent.runId,
    })
    const admitted = await getContinuation(db, NS, { attemptId: left.attemptId })
    expect(admitted?.state).toBe('pending')
    expect(admitted?.consumerRunId).not.toBe(parent.runId)
    const runs = await runsOf(db, parent.sessionId)
    expect(runs.filter((r) => r.trigger_type === 'async_subagent_result')).toEqual([
      expect.objectContaining({ cause_attempt_id: left.attemptId, id: admitted?.consumerRunId }),
    ])
  })
})

describe('suppression', () => {
  test('a cancelled parent, a deleted session and a shutdown each suppress with their reason, keep the evidence and admit no run', async ({
    db,
  }) => {
    const cancelled = await sessionWithRun(db)
    const cancelledChild = await delegateFrom(db, cancelled)
    await settleRun(db, { namespaceId: NS, runId: cancelled.runId, status: 'cancelled' })
    await finish(db, cancelledChild)

    const deleted = await sessionWithRun(db)
    const deletedChild = await delegateFrom(db, deleted)
    await settleRun(db, { namespaceId: NS, runId: deleted.runId, status: 'completed' })
    expect(await deleteSession(db, { namespaceId: NS, sessionId: deleted.sessionId })).toBe(
      'deleted',
    )
    await finish(db, deletedChild)

    const shutdown = await sessionWithRun(db)
    const shutdownChild = await delegateFrom(db, shutdown)
    await settleRun(db, { namespaceId: NS, runId: shutdown.runId, status: 'completed' })
    await finish(db, shutdownChild, {
      stopReason: 'aborted',
      output: '',
      failureCategory: FailureCategory.Shutdown,
    })

    for (const [parent, child, reason] of [
      [cancelled, cancelledChild, 'parent_cancelled'],
      [deleted, deletedChild, 'session_deleted'],
      [shutdown, shutdownChild, 'shutdown'],
    ] as const) {
      const record = await getContinuation(db, NS, { attemptId: child.attemptId })
      expect(record).toMatchObject({ state: 'suppressed', suppressionReason: reason })
      expect(record?.input).toBe(await durableResultInput(db, child.attemptId))
      expect(record?.inputDigest).toBe(continuationDigest(record?.input ?? ''))
      expect((await runsOf(db, parent.sessionId)).map((r) => r.trigger_type)).toEqual(['user'])
    }
    await reconcileDeliveries(db, { due: true, limit: 100 })
    expect((await runsOf(db, shutdown.sessionId)).map((r) => r.trigger_type)).toEqual(['user'])
  })

  test('a deletion fence suppresses a pending continuation and refuses new delegations and runs', async ({
    db,
  }) => {
    const parent = await sessionWithRun(db)
    const child = await delegateFrom(db, parent)
    await settleRun(db, { namespaceId: NS, runId: parent.runId, status: 'completed' })
    await finish(db, child)
    expect(await getContinuation(db, NS, { attemptId: child.attemptId })).toMatchObject({
      state: 'pending',
    })
    await deleteSession(db, { namespaceId: NS, sessionId: parent.sessionId })
    const record = await getContinuation(db, NS, { attemptId: child.attemptId })
    expect(record).toMatchObject({ state: 'suppressed', suppressionReason: 'session_deleted' })
    expect(
      await claimContinuation(db, {
        namespaceId: NS,
        sessionId: parent.sessionId,
        ownerId: 'h',
        leaseMs: 1000,
      }),
    ).toBeUndefined()
    const [refused] = await acceptDelegations(db, [
      {
        namespaceId: NS,
        sessionId: parent.sessionId,
        name: 'scripted',
        prompt: 'x',
        metadata: {},
        attemptId: randomUUID(),
        newAgentId: randomUUID(),
      },
    ])
    expect(refused).toEqual({ kind: 'session_deleted' })
    expect(
      await createRun(db, {
        namespaceId: NS,
        sessionId: parent.sessionId,
        runId: randomUUID(),
        consume: [],
      }),
    ).toEqual({ kind: 'session_deleted' })
  })
})

describe('delivery claims', () => {
  async function pendingContinuation(db: Parameters<typeof sessionWithRun>[0]) {
    const parent = await sessionWithRun(db)
    await settleRun(db, { namespaceId: NS, runId: parent.runId, status: 'completed' })
    const child = await delegateFrom(db, parent)
    await finish(db, child)
    return { parent, child }
  }

  test('a failed consumer is suppressed with its run, gets no automatic replacement, and one explicit run consumes the result once', async ({
    db,
  }) => {
    const { parent, child } = await pendingContinuation(db)
    const claim = await claimContinuation(db, {
      namespaceId: NS,
      sessionId: parent.sessionId,
      ownerId: 'h1',
      leaseMs: 60_000,
    })
    expect(claim?.attemptId).toBe(child.attemptId)
    const fence = { ownerId: 'h1', generation: claim?.generation ?? -1 }
    const failed = await settleRun(db, {
      namespaceId: NS,
      runId: claim?.runId ?? '',
      status: 'failed',
      fence,
    })
    expect(failed.kind).toBe('settled')
    expect(await getContinuation(db, NS, { attemptId: child.attemptId })).toMatchObject({
      state: 'suppressed',
      suppressionReason: 'consumer_failed',
      suppressionRunId: claim?.runId,
    })
    await reconcileDeliveries(db, { due: true, limit: 100 })
    expect(
      await claimContinuation(db, {
        namespaceId: NS,
        sessionId: parent.sessionId,
        ownerId: 'h2',
        leaseMs: 1000,
      }),
    ).toBeUndefined()
    expect(
      (await runsOf(db, parent.sessionId)).filter(
        (r) => r.trigger_type === 'async_subagent_result',
      ),
    ).toHaveLength(1)

    const explicit = randomUUID()
    const [first, second] = await Promise.all([
      createRun(db, {
        namespaceId: NS,
        sessionId: parent.sessionId,
        runId: explicit,
        consume: [child.attemptId],
      }),
      createRun(db, {
        namespaceId: NS,
        sessionId: parent.sessionId,
        runId: randomUUID(),
        consume: [child.attemptId],
      }),
    ])
    expect([first.kind, second.kind].sort()).toEqual(['created', 'not_consumable'])
    const winner =
      first.kind === 'created' ? first.run.id : second.kind === 'created' ? second.run.id : ''
    expect(
      (await settleRun(db, { namespaceId: NS, runId: winner, status: 'completed' })).kind,
    ).toBe('settled')
    expect(await getContinuation(db, NS, { attemptId: child.attemptId })).toMatchObject({
      state: 'delivered',
      consumerRunId: winner,
    })
    expect(
      await createRun(db, {
        namespaceId: NS,
        sessionId: parent.sessionId,
        runId: randomUUID(),
        consume: [child.attemptId],
      }),
    ).toEqual({ kind: 'not_consumable', attemptIds: [child.attemptId] })
  })

  test('a claim whose lease expired is released and re-claimed under a new generation; the first claimant cannot settle; an exact retry is replayed', async ({
    db,
  }) => {
    const { parent, child } = await pendingContinuation(db)
    const scope = { namespaceId: NS, sessionId: parent.sessionId }
    const first = await claimContinuation(db, { ...scope, ownerId: 'h1', leaseMs: 60_000 })
    expect(
      await claimContinuation(db, { ...scope, ownerId: 'h2', leaseMs: 60_000 }),
    ).toBeUndefined()
    await expireClaim(db, first?.runId ?? '')
    const second = await claimContinuation(db, { ...scope, ownerId: 'h2', leaseMs: 60_000 })
    expect(second).toMatchObject({
      runId: first?.runId,
      attemptId: child.attemptId,
      receipt: first?.receipt,
    })
    expect(second?.generation).toBe((first?.generation ?? 0) + 1)
    const stale = { ownerId: 'h1', generation: first?.generation ?? -1 }
    const current = { ownerId: 'h2', generation: second?.generation ?? -1 }
    const runId = second?.runId ?? ''
    expect(
      await renewContinuationClaim(db, { namespaceId: NS, runId, fence: stale, leaseMs: 1000 }),
    ).toEqual({ kind: 'stale_claim' })
    expect(
      await settleRun(db, { namespaceId: NS, runId, status: 'completed', fence: stale }),
    ).toEqual({ kind: 'stale_claim' })
    expect(
      (await settleRun(db, { namespaceId: NS, runId, status: 'completed', fence: current })).kind,
    ).toBe('settled')
    expect(
      (await settleRun(db, { namespaceId: NS, runId, status: 'completed', fence: current })).kind,
    ).toBe('replayed')
    expect(
      await settleRun(db, { namespaceId: NS, runId, status: 'completed', fence: stale }),
    ).toEqual({ kind: 'stale_claim' })
    expect(await getContinuation(db, NS, { attemptId: child.attemptId })).toMatchObject({
      state: 'delivered',
      consumerRunId: runId,
    })
  })

  test('the reconciler retains a deadline-expired claim under a live lease, acknowledges a completed consumer and releases a lease-lost one', async ({
    db,
  }) => {
    const { parent, child } = await pendingContinuation(db)
    const scope = { namespaceId: NS, sessionId: parent.sessionId }
    const claim = await claimContinuation(db, { ...scope, ownerId: 'h1', leaseMs: 60_000 })
    const runId = claim?.runId ?? ''
    await sql`update continuations set claim_deadline = now() - interval '1 second' where attempt_id = ${child.attemptId}::uuid`.execute(
      db,
    )
    expect(await reconcileDeliveries(db, { due: true, limit: 100 })).toEqual([
      { attemptId: child.attemptId, action: 'retained' },
    ])
    await expireClaim(db, runId)
    expect(await reconcileDeliveries(db, { due: true, limit: 100 })).toEqual([
      { attemptId: child.attemptId, action: 'released' },
    ])
    const again = await claimContinuation(db, { ...scope, ownerId: 'h2', leaseMs: 60_000 })
    // The consumer completed, but the claim was not acknowledged yet (a crash in between).
    await sql`update runs set status = 'completed', settled_at = now() where id = ${runId}::uuid`.execute(
      db,
    )
    expect(again?.runId).toBe(runId)
    expect(await reconcileDeliveries(db, { due: true, limit: 100 })).toEqual([
      { attemptId: child.attemptId, action: 'acknowledged' },
    ])
    expect(await reconcileDeliveries(db, { due: true, limit: 100 })).toEqual([])
  })
})

describe('namespaces', () => {
  test('another namespace sees none of a run or its continuation, and cannot settle, claim or delete them', async ({
    db,
  }) => {
    const parent = await sessionWithRun(db)
    await settleRun(db, { namespaceId: NS, runId: parent.runId, status: 'completed' })
    const child = await delegateFrom(db, parent)
    await finish(db, child)
    const other = 'another-namespace'
    expect(await getRun(db, other, parent.runId)).toBeUndefined()
    expect(await getContinuation(db, other, { attemptId: child.attemptId })).toBeUndefined()
    expect(
      await settleRun(db, { namespaceId: other, runId: parent.runId, status: 'failed' }),
    ).toEqual({
      kind: 'missing',
    })
    expect(
      await claimContinuation(db, {
        namespaceId: other,
        sessionId: parent.sessionId,
        ownerId: 'h',
        leaseMs: 1000,
      }),
    ).toBeUndefined()
    expect(await deleteSession(db, { namespaceId: other, sessionId: parent.sessionId })).toBe(
      'missing',
    )
    expect(await getContinuation(db, NS, { attemptId: child.attemptId })).toMatchObject({
      state: 'pending',
    })
  })
})
