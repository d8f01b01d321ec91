// Exactly-once continuations end to end: the API and workers as real processes, hosts as typed
// clients. Each test ends with the continuation audit (duplicate 0, missing 0).
import { randomUUID } from 'node:crypto'
import { sql } from 'kysely'
import {
  BatonApiError,
  DeliveryVerificationError,
  verifyDelivery,
  type BatonClient,
} from '@baton/client'
import {
  canonicalJson,
  continuationDigest,
  isTerminalView,
  resultDigest,
  type ContinuationClaim,
  type DeliveredResult,
  type TerminalAttemptView,
} from '@baton/contracts'
import { admitContinuations, durableResultInput, type Db } from '@baton/store'
import {
  auditContinuations,
  describe,
  eventually,
  expect,
  ledgerCopiesOf,
  test,
} from '@baton/testing'

const LEASE_MS = 1000
/**
 * The bound of one wait for an event of a full continuation round trip (a child's terminal, an
 * admitted continuation, a reconciler pass): generous, because these tests share a busy machine
 * with the rest of the suite; each wait returns as soon as its event happens.
 */
const EVENT_BOUND_MS = 60_000

/** A session with an active user run that delegates one scripted task. */
async function delegateFromRun(client: BatonClient, sessionId: string, script: object) {
  const run = await client.createRun(sessionId)
  const accepted = await client.delegate({
    sessionId,
    name: 'scripted',
    prompt: JSON.stringify(script),
    parentRunId: run.runId,
    metadata: { traceId: `trace-${sessionId}` },
  })
  return { runId: run.runId, attemptId: accepted.attemptId }
}

/** A result that lands after its parent run completed: the parent's ids, once it is terminal. */
async function lateResult(client: BatonClient, sessionId: string, script: object) {
  const delegated = await delegateFromRun(client, sessionId, script)
  await client.completeRun(delegated.runId)
  await untilTerminal(client, delegated.attemptId)
  return delegated
}

async function untilTerminal(client: BatonClient, attemptId: string): Promise<TerminalAttemptView> {
  return eventually(
    async () => {
      const view = await client.wait(attemptId, 2000)
      return isTerminalView(view) ? view : undefined
    },
    { timeoutMs: EVENT_BOUND_MS, what: `attempt ${attemptId} to end` },
  )
}

async function runRow(db: Db, runId: string) {
  return (await sql`select * from runs where id = ${runId}::uuid`.execute(db)).rows[0]
}

async function continuationRuns(db: Db, sessionId: string) {
  return (
    await sql<{ id: string; cause_attempt_id: string }>`
      select id, cause_attempt_id from runs
      where session_id = ${sessionId} and trigger_type = 'async_subagent_result'
    `.execute(db)
  ).rows
}

async function stateOf(client: BatonClient, attemptId: string) {
  const view = await client.getAttempt(attemptId)
  return isTerminalView(view) ? view.delivery : undefined
}

async function claimOf(client: BatonClient, sessionId: string): Promise<ContinuationClaim> {
  // One bounded claim; the API answers as soon as the continuation is admitted.
  const claim = await client.claimContinuation(sessionId, {
    timeoutMs: EVENT_BOUND_MS,
    leaseMs: LEASE_MS,
  })
  if (claim === undefined) throw new Error('no continuation arrived in time')
  return claim
}

async function expectAuditClean(db: Db, ...sessionIds: string[]) {
  const audit = await auditContinuations(db, sessionIds)
  expect(audit).toMatchObject({ duplicate: 0, missing: 0, expiredBytes: 0, unreceipted: 0 })
  return audit
}

// Each test chains several round trips, each bounded by EVENT_BOUND_MS.
describe('continuations', { timeout: 4 * EVENT_BOUND_MS }, () => {
  test('a parent run delegates and completes; the child finishes later: one async_subagent_result run, its input the store derivation and its receipt digest bound to it; the parent run unchanged', async ({
    baton,
    db,
  }) => {
    const { client } = await baton()
    const { runId, attemptId } = await delegateFromRun(client, 'late-result', {
      output: 'the answer\n"quoted" ✓',
      delayMs: 800,
    })
    const completed = await client.completeRun(runId)
    expect(completed.status).toBe('completed')
    const parentBefore = await runRow(db, runId)
    await untilTerminal(client, attemptId)

    const claim = await claimOf(client, 'late-result')
    expect(claim.attemptId).toBe(attemptId)
    expect(await continuationRuns(db, 'late-result')).toEqual([
      { id: claim.runId, cause_attempt_id: attemptId },
    ])
    expect(await client.getRun(claim.runId)).toMatchObject({
      triggerType: 'async_subagent_result',
      status: 'active',
      causeAttemptId: attemptId,
    })
    // The input the host gets is exactly what the store derives from its own rows, canonical.
    expect(claim.input).toBe(await durableResultInput(db, attemptId))
    expect(canonicalJson(JSON.parse(claim.input))).toBe(claim.input)
    expect(JSON.parse(claim.input).result.content).toEqual({
      kind: 'inline',
      text: 'the answer\n"quoted" ✓',
    })
    const receipt = JSON.parse(claim.receipt)
    expect(receipt).toMatchObject({
      attemptId,
      inputDigest: continuationDigest(claim.input),
      cause: {
        attemptId,
        parentRunId: runId,
        sessionId: 'late-result',
        traceId: 'trace-late-result',
      },
    })
    expect(await runRow(db, runId)).toEqual(parentBefore)

    const done = await client.completeContinuation(claim.runId, claim.claim)
    expect(done).toMatchObject({ attemptId, receipt: claim.receipt, replayed: false })
    expect(done.delivery).toMatchObject({ state: 'delivered', consumingRunId: claim.runId })
    expect(await runRow(db, runId)).toEqual(parentBefore)
    expect(await expectAuditClean(db, 'late-result')).toMatchObject({ admitted: 1, delivered: 1 })
  })

  test('the same terminal event processed twice at once, and again after a worker restart: one continuation, byte-identical receipts', async ({
    baton,
    db,
  }) => {
    const stack = await baton()
    const { client } = stack
    const { attemptId } = await lateResult(client, 'twice', { output: 'once' })
    const concurrent = await Promise.all([
      admitContinuations(db, [attemptId]),
      admitContinuations(db, [attemptId]),
    ])
    await stack.restartWorker()
    // The restarted fleet sees the job's attempt terminal and admits nothing new; admission again.
    const again = await admitContinuations(db, [attemptId])
    const receipts = [...concurrent.flat(), ...again]
    expect(receipts).toHaveLength(3)
    expect(new Set(receipts).size).toBe(1)
    const claim = await claimOf(client, 'twice')
    expect(Buffer.from(claim.receipt)).toEqual(Buffer.from(receipts[0] ?? ''))
    expect(await continuationRuns(db, 'twice')).toHaveLength(1)
    await client.completeContinuation(claim.runId, claim.claim)
    await expectAuditClean(db, 'twice')
  })

  test('SIGKILL mid-run, after the terminal commit (admission is in it), after a claim and mid-consumer: each result is consumed exactly once', async ({
    baton,
    db,
  }) => {
    // Only the doomed worker runs at first, so both children are surely its own.
    const stack = await baton()
    const doomed = stack.worker
    let client = stack.client

    // Mid-run: a hanging child whose worker dies; the survivor's reconciler records process loss.
    const lost = await delegateFromRun(client, 'kill-mid-run', { hang: true })
    await client.completeRun(lost.runId)
    // After the terminal commit: the child ends at once, its worker is killed right after.
    const quick = await delegateFromRun(client, 'kill-after-commit', { output: 'quick' })
    await client.completeRun(quick.runId)
    await stack.untilRunning(lost.attemptId)
    await untilTerminal(client, quick.attemptId)
    await stack.startWorker()
    await stack.killWorker(doomed)
    expect((await untilTerminal(client, lost.attemptId)).failureCategory).toBe('process_lost')

    // After a claim: the API that answered the claim dies; a new API, the lease expires, re-claim.
    const first = await claimOf(client, 'kill-mid-run')
    await stack.killApi()
    await stack.startApi()
    client = stack.client
    const second = await claimOf(client, 'kill-mid-run')
    expect(second).toMatchObject({ runId: first.runId, receipt: first.receipt })
    expect(second.claim.generation).toBe(first.claim.generation + 1)
    await client.completeContinuation(second.runId, second.claim)

    // Mid-consumer: the consumer heartbeats once, then its API dies; the workers' reconciler
    // releases the lease-lost claim by itself, and a new consumer finishes it.
    const consumer = await claimOf(client, 'kill-after-commit')
    await client.heartbeatContinuation(consumer.runId, consumer.claim, LEASE_MS)
    await stack.killApi()
    await eventually(
      async () => {
        const row = await sql<{ state: string }>`
          select state from continuations where attempt_id = ${quick.attemptId}::uuid
        `.execute(db)
        return row.rows[0]?.state === 'pending' ? true : undefined
      },
      { timeoutMs: EVENT_BOUND_MS, what: 'the reconciler to release the claim' },
    )
    await stack.startApi()
    client = stack.client
    const resumed = await claimOf(client, 'kill-after-commit')
    expect(resumed.runId).toBe(consumer.runId)
    await client.completeContinuation(resumed.runId, resumed.claim)

    for (const { attemptId } of [lost, quick])
      expect(await stateOf(client, attemptId)).toMatchObject({ state: 'delivered' })
    expect(await expectAuditClean(db, 'kill-mid-run', 'kill-after-commit')).toMatchObject({
      admitted: 2,
      delivered: 2,
      suppressed: 0,
    })
  }, 120_000) // four processes killed and started again: far beyond its few seconds, on any load

  test('a failed consumer: suppression recorded, no automatic replacement; one explicit run consumes the result, a second is refused', async ({
    baton,
    db,
  }) => {
    const { client } = await baton()
    const { attemptId } = await lateResult(client, 'failing', { output: 'x' })
    const claim = await claimOf(client, 'failing')
    const failed = await client.failContinuation(claim.runId, claim.claim)
    expect(failed.delivery).toEqual({
      state: 'suppressed',
      receiptDigest: JSON.parse(claim.receipt).inputDigest,
      consumingRunId: claim.runId,
      suppression: { reason: 'consumer_failed', runId: claim.runId },
    })
    // An exact retry answers the identical receipt.
    expect(await client.failContinuation(claim.runId, claim.claim)).toMatchObject({
      receipt: claim.receipt,
      replayed: true,
    })
    expect(await client.claimContinuation('failing', { timeoutMs: 300, leaseMs: LEASE_MS })).toBe(
      undefined,
    )
    expect(await continuationRuns(db, 'failing')).toHaveLength(1)

    const explicit = await client.createRun('failing', { consume: [attemptId] })
    expect(explicit.triggerType).toBe('explicit')
    const refused = await client.createRun('failing', { consume: [attemptId] }).catch((e) => e)
    expect(refused).toBeInstanceOf(BatonApiError)
    expect(refused).toMatchObject({ status: 409, code: 'RESULT_NOT_CONSUMABLE' })
    await client.completeRun(explicit.runId)
    expect(await stateOf(client, attemptId)).toMatchObject({
      state: 'delivered',
      consumingRunId: explicit.runId,
    })
    await expectAuditClean(db, 'failing')
  })

  test('a cancelled parent, a deleted session and a fleet shutdown each suppress with their reason, keep the evidence and admit nothing', async ({
    baton,
    db,
  }) => {
    const stack = await baton({ workerEnv: { SHUTDOWN_DEADLINE_MS: '300' } })
    const { client } = stack
    const cancelled = await delegateFromRun(client, 'cancelled-parent', {
      output: 'c',
      delayMs: 500,
    })
    await client.cancelRun(cancelled.runId)
    const deleted = await delegateFromRun(client, 'deleted-session', { output: 'd', delayMs: 500 })
    await client.completeRun(deleted.runId)
    await client.deleteSession('deleted-session')
    const shutdown = await delegateFromRun(client, 'shutdown', { hang: true })
    await client.completeRun(shutdown.runId)
    await untilTerminal(client, cancelled.attemptId)
    await untilTerminal(client, deleted.attemptId)
    await stack.untilRunning(shutdown.attemptId)
    expect(await stack.killWorker(stack.worker, 'SIGTERM')).toBe(0)
    expect((await untilTerminal(client, shutdown.attemptId)).failureCategory).toBe('shutdown')

    for (const [sessionId, attemptId, reason] of [
      ['cancelled-parent', cancelled.attemptId, 'parent_cancelled'],
      ['deleted-session', deleted.attemptId, 'session_deleted'],
      ['shutdown', shutdown.attemptId, 'shutdown'],
    ] as const) {
      const input = await durableResultInput(db, attemptId)
      expect(await stateOf(client, attemptId)).toEqual({
        state: 'suppressed',
        receiptDigest: continuationDigest(input ?? ''),
        consumingRunId: null,
        suppression: { reason, runId: null },
      })
      expect(await continuationRuns(db, sessionId)).toEqual([])
      expect(
        await client.claimContinuation(sessionId, { timeoutMs: 0, leaseMs: LEASE_MS }),
      ).toBeUndefined()
    }
    const fenced = await client
      .delegate({ sessionId: 'deleted-session', name: 'scripted', prompt: 'late' })
      .catch((e) => e)
    expect(fenced).toMatchObject({ status: 409, code: 'SESSION_DELETED' })
    expect(
      await expectAuditClean(db, 'cancelled-parent', 'deleted-session', 'shutdown'),
    ).toMatchObject({ admitted: 3, suppressed: 3 })
  })

  test("a host claims, crashes, re-claims after the lease expires and completes: one delivery; the first claimant's late complete is refused", async ({
    baton,
    db,
  }) => {
    const { client } = await baton()
    const { attemptId } = await lateResult(client, 'host-crash', { output: 'r' })
    const crashed = await claimOf(client, 'host-crash')
    // Nothing else is claimable while the first claim's lease is live: the bound ends the wait.
    expect(
      await client.claimContinuation('host-crash', { timeoutMs: 200, leaseMs: LEASE_MS }),
    ).toBe(undefined)
    const second = await eventually(
      () => client.claimContinuation('host-crash', { timeoutMs: 500, leaseMs: LEASE_MS }),
      { timeoutMs: EVENT_BOUND_MS, what: 'the lease to expire' },
    )
    expect(second).toMatchObject({ runId: crashed.runId, attemptId, receipt: crashed.receipt })
    const done = await client.completeContinuation(second.runId, second.claim)
    expect(done.delivery.state).toBe('delivered')
    const late = await client.completeContinuation(crashed.runId, crashed.claim).catch((e) => e)
    expect(late).toMatchObject({ status: 409, code: 'STALE_CLAIM' })
    expect(await client.completeContinuation(second.runId, second.claim)).toEqual({
      ...done,
      replayed: true,
    })
    expect(await expectAuditClean(db, 'host-crash')).toMatchObject({ admitted: 1, delivered: 1 })
  })

  test('a result landing while its parent run is active is held for it; the run consumes it by waiting, and nothing else is admitted', async ({
    baton,
    db,
  }) => {
    const { client } = await baton()
    const { runId, attemptId } = await delegateFromRun(client, 'held', { output: 'h' })
    await untilTerminal(client, attemptId)
    expect(await stateOf(client, attemptId)).toMatchObject({
      state: 'pending',
      consumingRunId: runId,
    })
    await client.completeRun(runId, { consumed: [attemptId] })
    expect(await stateOf(client, attemptId)).toMatchObject({
      state: 'delivered',
      consumingRunId: runId,
    })
    expect(await continuationRuns(db, 'held')).toEqual([])
    await expectAuditClean(db, 'held')
  })
  test('held and explicit consumption answer each result with its receipt, input and content; the host verifies them with the client', async ({
    baton,
  }) => {
    const { client } = await baton()
    const held = await delegateFromRun(client, 'receipts', { output: 'held ✓' })
    await untilTerminal(client, held.attemptId)
    const completed = await client.completeRun(held.runId, { consumed: [held.attemptId] })
    expect(completed).toMatchObject({
      status: 'completed',
      consumed: [{ attemptId: held.attemptId }],
    })
    const [consumed] = completed.consumed
    if (consumed === undefined) throw new Error('no receipt for the held result')
    expect(verifyDelivery(consumed).text).toBe('held ✓')
    expect(JSON.parse(consumed.receipt).inputDigest).toBe(
      (await stateOf(client, held.attemptId))?.receiptDigest,
    )
    // A repeat of the completion answers the same receipts.
    expect((await client.completeRun(held.runId, { consumed: [held.attemptId] })).consumed).toEqual(
      completed.consumed,
    )

    const { attemptId } = await lateResult(client, 'receipts', { output: 'late ✓' })
    const claim = await claimOf(client, 'receipts')
    expect(verifyDelivery(claim).text).toBe('late ✓')
    await client.failContinuation(claim.runId, claim.claim)
    const explicit = await client.createRun('receipts', { consume: [attemptId] })
    expect(explicit.consumed.map((c) => [c.attemptId, c.receipt])).toEqual([
      [attemptId, claim.receipt],
    ])
    expect(verifyDelivery(explicit.consumed[0] as DeliveredResult).text).toBe('late ✓')
    await client.completeRun(explicit.runId)

    // What does not hold together is refused by the check.
    const tampered = { ...consumed, input: consumed.input.replace('held ✓', 'held ✗') }
    expect(() => verifyDelivery(tampered)).toThrow(DeliveryVerificationError)
    const swapped = { ...consumed, content: { kind: 'inline', text: 'other' } } as const
    expect(() => verifyDelivery(swapped)).toThrow(/not what the input names/)
  })

  test('an artifact past its deadline is served by no route, no claim and no consumption (each carries the expiry summary), and no copy of its bytes is left in the ledger', async ({
    baton,
    db,
  }) => {
    const { client } = await baton()
    const big = (label: string) => ({ output: `${label}-${randomUUID()}-`, outputBytes: 20_000 })
    // Held for its run; pending as a continuation; suppressed for an explicit run.
    const held = await delegateFromRun(client, 'expiry-held', big('held'))
    await untilTerminal(client, held.attemptId)
    const pending = await lateResult(client, 'expiry-claim', big('claim'))
    const suppressed = await lateResult(client, 'expiry-explicit', big('explicit'))
    const failed = await claimOf(client, 'expiry-explicit')
    await client.failContinuation(failed.runId, failed.claim)

    const results: { attemptId: string; artifactId: string; content: Uint8Array }[] = []
    for (const { attemptId } of [held, pending, suppressed]) {
      const view = await client.getAttempt(attemptId)
      if (!isTerminalView(view) || view.artifact === null) throw new Error('no artifact')
      const content = (await client.readArtifact(view.artifact.artifactId)).content
      // The content lives in one place: its artifact.
      expect(await ledgerCopiesOf(db, content)).toEqual(['artifact_chunks.content'])
      results.push({ attemptId, artifactId: view.artifact.artifactId, content })
    }
    // Their retention ends: the artifacts are older than it, and nothing has expired them yet.
    await sql`
      update artifacts set created_at = created_at - interval '8 days',
                           expires_at = expires_at - interval '8 days'
      where id = any(${results.map((r) => r.artifactId)}::uuid[])
    `.execute(db)

    const summary = (i: number) => ({
      kind: 'expired',
      artifactId: results[i]?.artifactId,
      bytes: 20_000,
      digest: resultDigest(results[i]?.content ?? ''),
    })
    const completed = await client.completeRun(held.runId, { consumed: [held.attemptId] })
    const claimed = await claimOf(client, 'expiry-claim')
    const explicit = await client.createRun('expiry-explicit', { consume: [suppressed.attemptId] })
    const deliveries = [completed.consumed[0], claimed, explicit.consumed[0]]
    deliveries.forEach((delivered, i) => {
      if (delivered === undefined) throw new Error(`delivery ${i} has no result`)
      expect(delivered.content).toEqual(summary(i))
      expect(verifyDelivery(delivered).text).toBeUndefined()
    })
    for (const { artifactId } of results) {
      const read = await client.readArtifact(artifactId).catch((e: unknown) => e)
      expect(read).toMatchObject({ status: 410, code: 'ARTIFACT_EXPIRED' })
    }
    await client.completeContinuation(claimed.runId, claimed.claim)
    await client.completeRun(explicit.runId)

    // The reconciler deletes the content; then no table holds the bytes, nor their base64.
    await eventually(
      async () => {
        const kept = await sql<{ n: number }>`
          select count(*)::int as n from artifacts
          where id = any(${results.map((r) => r.artifactId)}::uuid[]) and expired_at is null
        `.execute(db)
        return kept.rows[0]?.n === 0 ? true : undefined
      },
      { timeoutMs: EVENT_BOUND_MS, what: 'the reconciler to expire the artifacts' },
    )
    for (const { content } of results) expect(await ledgerCopiesOf(db, content)).toEqual([])
    await expectAuditClean(db, 'expiry-held', 'expiry-claim', 'expiry-explicit')
  })

  test('a host that dies holding a run: after its lease, its held result is released and delivered to the next claimant exactly once; its late end is refused', async ({
    baton,
    db,
  }) => {
    const { client } = await baton()
    const run = await client.createRun('host-dies', { leaseMs: 1000 })
    expect(run.leaseExpiresAt).not.toBeNull()
    const { attemptId } = await client.delegate({
      sessionId: 'host-dies',
      name: 'scripted',
      prompt: JSON.stringify({ output: 'held for a dead host' }),
      parentRunId: run.runId,
    })
    await untilTerminal(client, attemptId)
    // The host is gone: no heartbeat, no end. The next claimant waits on the session's bell.
    const claim = await claimOf(client, 'host-dies')
    await client.completeContinuation(claim.runId, claim.claim)
    expect(
      await client.claimContinuation('host-dies', { timeoutMs: 500, leaseMs: LEASE_MS }),
    ).toBeUndefined()
    expect(claim.attemptId).toBe(attemptId)
    expect(verifyDelivery(claim).text).toBe('held for a dead host')
    expect(await client.getRun(run.runId)).toMatchObject({
      status: 'abandoned',
      leaseExpiresAt: null,
    })
    // One late call at a time: a second call's refusal must not arrive while nothing awaits it.
    for (const late of [
      () => client.completeRun(run.runId, { consumed: [attemptId] }),
      () => client.heartbeatRun(run.runId, 1000),
    ])
      expect(await late().catch((e: unknown) => e)).toMatchObject({
        status: 409,
        code: 'RUN_NOT_ACTIVE',
        details: { status: 'abandoned' },
      })
    expect(await stateOf(client, attemptId)).toMatchObject({
      state: 'delivered',
      consumingRunId: claim.runId,
    })
    expect(await continuationRuns(db, 'host-dies')).toHaveLength(1)
    expect(await expectAuditClean(db, 'host-dies')).toMatchObject({ admitted: 1, delivered: 1 })
  })

  test('a host that renews its run keeps it past its first lease; a delegation naming a run that ended or never started is refused with RUN_NOT_ACTIVE and writes nothing', async ({
    baton,
    db,
  }) => {
    const { client } = await baton()
    const run = await client.createRun('renewed', { leaseMs: 1000 })
    const renewed = await client.heartbeatRun(run.runId, 60_000)
    expect(Date.parse(renewed.leaseExpiresAt)).toBeGreaterThan(Date.parse(run.leaseExpiresAt ?? ''))
    const { attemptId } = await client.delegate({
      sessionId: 'renewed',
      name: 'scripted',
      prompt: 'kept',
      parentRunId: run.runId,
    })
    await untilTerminal(client, attemptId)
    const ended = await client.completeRun(run.runId, { consumed: [attemptId] })
    expect(ended).toMatchObject({ status: 'completed', consumed: [{ attemptId }] })

    const before = await sql<{ n: number }>`select count(*)::int as n from attempts`.execute(db)
    const refused = await client
      .delegate({ sessionId: 'renewed', name: 'scripted', prompt: 'late', parentRunId: run.runId })
      .catch((e: unknown) => e)
    expect(refused).toMatchObject({
      status: 409,
      code: 'RUN_NOT_ACTIVE',
      details: { runId: run.runId, status: 'completed' },
    })
    const after = await sql<{ n: number }>`select count(*)::int as n from attempts`.execute(db)
    expect(after.rows).toEqual(before.rows)
  })
})
