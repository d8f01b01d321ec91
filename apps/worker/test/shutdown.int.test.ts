// Checked shutdown of an in-process worker against real Redis and Postgres.
import { sql } from 'kysely'
import { claimAttempt, getAttempt, requestCancel, type Db } from '@baton/store'
import type { SubagentResult } from '@baton/subagents'
import { describe, expect, test, untilAttempt } from '@baton/testing'
import { ShutdownDeadlineError } from '../src/shutdown.ts'
import {
  accept,
  childProvider,
  enqueue,
  startRuntime,
  type WorkerTestContext,
} from './support/worker-harness.ts'

/** A child that ignores its AbortSignal and ends (`aborted`) only when the test releases it. */
function stubbornChild() {
  let release!: () => void
  const released = new Promise<void>((resolve) => (release = resolve))
  let starts = 0
  const provider = childProvider(async (): Promise<SubagentResult> => {
    starts += 1
    await released
    return { output: [{ type: 'text', text: 'late' }], stopReason: 'aborted' }
  })
  return { provider, release, starts: () => starts }
}

/** A runtime whose stubborn child runs one attempt. */
async function runningStubborn(ctx: WorkerTestContext & { readonly db: Db }) {
  const child = stubbornChild()
  const runtime = await startRuntime(ctx, child.provider)
  const attemptId = await accept(ctx.db, 'first')
  await enqueue(ctx, attemptId)
  await untilAttempt(ctx.db, attemptId, 'running')
  return { child, runtime, attemptId }
}

function status(db: Db, attemptId: string) {
  return getAttempt(db, attemptId).then((v) => v?.status)
}

describe('checked shutdown', () => {
  test('admits no new work once it began: an attempt enqueued meanwhile stays accepted', async ({
    services: ctx,
    db,
  }) => {
    const { child, runtime, attemptId: first } = await runningStubborn(ctx)
    const early = await runtime.shutdownChecked(100).catch((error: unknown) => error)
    expect(early).toBeInstanceOf(ShutdownDeadlineError)
    const late = await accept(db, 'late')
    await enqueue(ctx, late)
    await new Promise((r) => setTimeout(r, 800))
    expect(await status(db, late)).toBe('accepted')
    expect(child.starts()).toBe(1)
    child.release()
    await runtime.shutdownChecked(5_000)
    expect(await status(db, late)).toBe('accepted')
    // Left for another worker; cancelled here so that no later worker of this file runs it.
    await requestCancel(db, { attemptId: late, reason: null })
    expect(await getAttempt(db, first)).toMatchObject({
      status: 'terminal',
      failureCategory: 'shutdown',
    })
  })

  test('counts confirmed owner loss as drained, even with a child that ignores its abort', async ({
    services: ctx,
    db,
  }) => {
    const { child, runtime, attemptId } = await runningStubborn(ctx)
    try {
      // Another owner takes the attempt over: the next heartbeat confirms the loss.
      await sql`
        update attempts set owner_id = 'another-worker', owner_generation = owner_generation + 1
        where id = ${attemptId}
      `.execute(db)
      await runtime.shutdownChecked(3_000)
      expect(runtime.isStopped()).toBe(true)
      // The lost attempt was left alone: this worker wrote nothing for it.
      expect(await getAttempt(db, attemptId)).toMatchObject({ status: 'running' })
    } finally {
      child.release()
    }
  })

  test('leaves ledger rows without a live local execution to the reconciler, without waiting for them', async ({
    services: ctx,
    db,
  }) => {
    const child = stubbornChild()
    const runtime = await startRuntime(ctx, child.provider)
    // The ledger says this worker owns an attempt that no job of it runs (say, a claim whose
    // job was lost on the way back).
    const attemptId = await accept(db, 'x')
    const claim = await claimAttempt(db, {
      attemptId,
      ownerId: runtime.workerId,
      leaseTtlMs: 60_000,
    })
    if (claim.kind !== 'claimed') throw new Error(claim.kind)
    const started = performance.now()
    await runtime.shutdownChecked(5_000)
    expect(performance.now() - started).toBeLessThan(2_000)
    const row = await sql<{ status: string; owner_id: string; live: boolean }>`
      select status, owner_id, lease_expires_at > now() as live from attempts where id = ${attemptId}
    `.execute(db)
    expect(row.rows[0]).toEqual({ status: 'running', owner_id: runtime.workerId, live: true })
    child.release()
  })

  test('runs a final reconcile pass: an orphan whose lease expired ends process_lost', async ({
    services: ctx,
    db,
  }) => {
    const child = stubbornChild()
    // The periodic pass never comes within this test: only the final one can record the loss.
    const runtime = await startRuntime(ctx, child.provider, { RECONCILE_INTERVAL_MS: '600000' })
    const attemptId = await accept(db, 'x')
    const claim = await claimAttempt(db, { attemptId, ownerId: 'vanished', leaseTtlMs: 100 })
    if (claim.kind !== 'claimed') throw new Error(claim.kind)
    await new Promise((r) => setTimeout(r, 300))
    expect(await status(db, attemptId)).toBe('running')
    await runtime.shutdownChecked(5_000)
    expect(await getAttempt(db, attemptId)).toMatchObject({
      status: 'terminal',
      failureCategory: 'process_lost',
    })
    child.release()
  })
})
