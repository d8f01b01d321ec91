import { randomUUID } from 'node:crypto'
import { sql } from 'kysely'
import { FailureCategory, canonicalJson, continuationDigest, resultDigest } from '@baton/contracts'
import { describe, expect, test } from '@baton/testing'
import { acceptDelegations } from '../../src/attempts/accept-delegations.ts'
import { commitProcessLoss } from '../../src/attempts/reconcile-process-loss.ts'
import { requestCancel } from '../../src/attempts/request-cancel.ts'
import { artifactIdFor } from '../../src/attempts/terminal-record.ts'
import { createRun } from '../../src/runs/create-run.ts'
import { getRun } from '../../src/runs/get-run.ts'
import { endRun } from '../../src/runs/end-run.ts'
import { renewRunLease } from '../../src/runs/renew-run-lease.ts'
import {
  admitContinuations,
  durableResultInput,
} from '../../src/continuations/admit-continuation.ts'
import { claimContinuation } from '../../src/continuations/claim-continuation.ts'
import { deleteSession } from '../../src/continuations/delete-session.ts'
import { getContinuation } from '../../src/continuations/get-continuation.ts'
import {
  reconcileDeliveries,
  type DeliveryScope,
} from '../../src/continuations/reconcile-deliveries.ts'
import type { Db } from '../../src/db.ts'
import {
  NS,
  continuationRows,
  delegateFrom,
  expireClaim,
  finish,
  pendingContinuation,
  runsOf,
  sessionWithRun,
} from '../support/continuations.ts'

describe('continuation admission', () => {
  test('an output kept in an artifact is referred to by the canonical input (id, size, digest; no byte of it), and a claim delivers its exact bytes, U+0000 included', async ({
    db,
  }) => {
    const parent = await sessionWithRun(db)
    const child = await delegateFrom(db, parent)
    await endRun(db, { namespaceId: NS, runId: parent.runId, status: 'completed' })
    const output = `${'report line ✓\n'.repeat(2000)}\u0000 the end`
    expect(
      await finish(db, child, { stopReason: 'completed', output, failureCategory: null }),
    ).toBe('committed')
    const record = await getContinuation(db, NS, { attemptId: child.attemptId })
    const input = record?.input ?? ''
    expect(canonicalJson(JSON.parse(input))).toBe(input)
    const artifactId = artifactIdFor(child.attemptId)
    const reference = {
      artifactId,
      bytes: Buffer.byteLength(output),
      digest: resultDigest(output),
      kind: 'artifact',
    }
    expect(JSON.parse(input).result.content).toEqual(reference)
    expect(input).not.toContain(Buffer.from(output).toString('base64').slice(0, 64))
    expect(record?.inputDigest).toBe(continuationDigest(input))

    const claim = await claimContinuation(db, {
      namespaceId: NS,
      sessionId: parent.sessionId,
      claimToken: 'h1',
      leaseMs: 60_000,
    })
    expect(claim).toMatchObject({ attemptId: child.attemptId, input, receipt: record?.receipt })
    expect(claim?.content).toEqual({ ...reference, text: output })
  })

  test('a result landing after its parent run completed admits exactly one continuation run, bound to the ledger-derived input; the parent run is unchanged', async ({
    db,
  }) => {
    const parent = await sessionWithRun(db)
    const child = await delegateFrom(db, parent)
    expect(
      (await endRun(db, { namespaceId: NS, runId: parent.runId, status: 'completed' })).kind,
    ).toBe('ended')
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
    const child = await delegateFrom(db, parent)
    await endRun(db, { namespaceId: NS, runId: parent.runId, status: 'completed' })
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

  test('every terminal path admits: a queued cancel and a process loss; each names the session whose claims it wakes', async ({
    db,
  }) => {
    const parent = await sessionWithRun(db)
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
    const lost = await delegateFrom(db, parent)
    await endRun(db, { namespaceId: NS, runId: parent.runId, status: 'completed' })
    const session = { namespaceId: NS, sessionId: parent.sessionId }
    expect(await requestCancel(db, { attemptId: queuedId, reason: null })).toEqual({
      kind: 'cancelled_queued',
      parentSession: session,
    })
    await sql`update attempts set lease_expires_at = now() - interval '1 second' where id = ${lost.attemptId}::uuid`.execute(
      db,
    )
    expect(
      await commitProcessLoss(db, [
        { attemptId: lost.attemptId, ownerGeneration: lost.generation },
      ]),
    ).toEqual([{ attemptId: lost.attemptId, parentSession: session, session }])
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
        await endRun(db, {
          namespaceId: NS,
          runId: parent.runId,
          status: 'completed',
          consumed: [consumed.attemptId],
        })
      ).kind,
    ).toBe('ended')
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
    await endRun(db, { namespaceId: NS, runId: cancelled.runId, status: 'cancelled' })
    await finish(db, cancelledChild)

    const deleted = await sessionWithRun(db)
    const deletedChild = await delegateFrom(db, deleted)
    await endRun(db, { namespaceId: NS, runId: deleted.runId, status: 'completed' })
    expect(await deleteSession(db, { namespaceId: NS, sessionId: deleted.sessionId })).toBe(
      'deleted',
    )
    await finish(db, deletedChild)

    const shutdown = await sessionWithRun(db)
    const shutdownChild = await delegateFrom(db, shutdown)
    await endRun(db, { namespaceId: NS, runId: shutdown.runId, status: 'completed' })
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
    await endRun(db, { namespaceId: NS, runId: parent.runId, status: 'completed' })
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
        claimToken: 'h',
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
        leaseMs: 60_000,
      }),
    ).toEqual({ kind: 'session_deleted' })
  })
})

/** The reconciler's sweep (or another scope), as attempt and action only. */
async function sweep(db: Db, scope: DeliveryScope = { due: true, limit: 100 }) {
  return (await reconcileDeliveries(db, scope)).map(({ attemptId, action }) => ({
    attemptId,
    action,
  }))
}

describe('delivery claims', () => {
  test('a failed consumer is suppressed with its run, gets no automatic replacement, and one explicit run consumes the result once', async ({
    db,
  }) => {
    const { parent, child } = await pendingContinuation(db)
    const claim = await claimContinuation(db, {
      namespaceId: NS,
      sessionId: parent.sessionId,
      claimToken: 'h1',
      leaseMs: 60_000,
    })
    expect(claim?.attemptId).toBe(child.attemptId)
    const fence = { claimToken: 'h1', generation: claim?.fence.generation ?? -1 }
    const failed = await endRun(db, {
      namespaceId: NS,
      runId: claim?.runId ?? '',
      status: 'failed',
      fence,
    })
    expect(failed.kind).toBe('ended')
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
        claimToken: 'h2',
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
        leaseMs: 60_000,
      }),
      createRun(db, {
        namespaceId: NS,
        sessionId: parent.sessionId,
        runId: randomUUID(),
        consume: [child.attemptId],
        leaseMs: 60_000,
      }),
    ])
    expect([first.kind, second.kind].sort()).toEqual(['created', 'not_consumable'])
    const winner =
      first.kind === 'created' ? first.run.id : second.kind === 'created' ? second.run.id : ''
    expect((await endRun(db, { namespaceId: NS, runId: winner, status: 'completed' })).kind).toBe(
      'ended',
    )
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
        leaseMs: 60_000,
      }),
    ).toEqual({ kind: 'not_consumable', attemptIds: [child.attemptId] })
  })

  test('a claim whose lease expired is released and re-claimed under a new generation; the first claimant cannot settle; an exact retry is replayed', async ({
    db,
  }) => {
    const { parent, child } = await pendingContinuation(db)
    // A claim first releases its session's lapsed claims, as the API's first try does.
    const scope = { namespaceId: NS, sessionId: parent.sessionId, releaseLapsed: true }
    const first = await claimContinuation(db, { ...scope, claimToken: 'h1', leaseMs: 60_000 })
    expect(
      await claimContinuation(db, { ...scope, claimToken: 'h2', leaseMs: 60_000 }),
    ).toBeUndefined()
    await expireClaim(db, first?.runId ?? '')
    const second = await claimContinuation(db, { ...scope, claimToken: 'h2', leaseMs: 60_000 })
    expect(second).toMatchObject({
      runId: first?.runId,
      attemptId: child.attemptId,
      receipt: first?.receipt,
    })
    expect(second?.fence.generation).toBe((first?.fence.generation ?? 0) + 1)
    const stale = { claimToken: 'h1', generation: first?.fence.generation ?? -1 }
    const current = { claimToken: 'h2', generation: second?.fence.generation ?? -1 }
    const runId = second?.runId ?? ''
    expect(
      await renewRunLease(db, { namespaceId: NS, runId, fence: stale, leaseMs: 1000 }),
    ).toEqual({ kind: 'stale_claim' })
    expect(await endRun(db, { namespaceId: NS, runId, status: 'completed', fence: stale })).toEqual(
      { kind: 'stale_claim' },
    )
    expect(
      (await endRun(db, { namespaceId: NS, runId, status: 'completed', fence: current })).kind,
    ).toBe('ended')
    expect(
      (await endRun(db, { namespaceId: NS, runId, status: 'completed', fence: current })).kind,
    ).toBe('replayed')
    expect(await endRun(db, { namespaceId: NS, runId, status: 'completed', fence: stale })).toEqual(
      { kind: 'stale_claim' },
    )
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
    const claim = await claimContinuation(db, { ...scope, claimToken: 'h1', leaseMs: 60_000 })
    const runId = claim?.runId ?? ''
    await sql`update continuations set claim_deadline = now() - interval '1 second' where attempt_id = ${child.attemptId}::uuid`.execute(
      db,
    )
    // Under a live lease of its generation the claim is retained: the sweep does not even take
    // it (so retained claims never fill a batch), and its own run's reconciliation retains it.
    expect(await sweep(db)).toEqual([])
    expect(await sweep(db, { consumerRunIds: [runId] })).toEqual([
      { attemptId: child.attemptId, action: 'retained' },
    ])
    await expireClaim(db, runId)
    expect(await sweep(db)).toEqual([{ attemptId: child.attemptId, action: 'released' }])
    const again = await claimContinuation(db, { ...scope, claimToken: 'h2', leaseMs: 60_000 })
    // The consumer completed, but the claim was not acknowledged yet (a crash in between).
    await sql`update runs set status = 'completed', settled_at = now() where id = ${runId}::uuid`.execute(
      db,
    )
    expect(again?.runId).toBe(runId)
    expect(await sweep(db)).toEqual([{ attemptId: child.attemptId, action: 'acknowledged' }])
    expect(await sweep(db)).toEqual([])
  })
})

describe('namespaces', () => {
  test('another namespace sees none of a run or its continuation, and cannot settle, claim or delete them', async ({
    db,
  }) => {
    const parent = await sessionWithRun(db)
    const child = await delegateFrom(db, parent)
    await endRun(db, { namespaceId: NS, runId: parent.runId, status: 'completed' })
    await finish(db, child)
    const other = 'another-namespace'
    expect(await getRun(db, other, parent.runId)).toBeUndefined()
    expect(await getContinuation(db, other, { attemptId: child.attemptId })).toBeUndefined()
    expect(await endRun(db, { namespaceId: other, runId: parent.runId, status: 'failed' })).toEqual(
      {
        kind: 'missing',
      },
    )
    expect(
      await claimContinuation(db, {
        namespaceId: other,
        sessionId: parent.sessionId,
        claimToken: 'h',
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
