// Each failover, overload and cancel code Postgres answers with, and a connection reset after the
// ledger acted, at the three points where a worker writes: its claim, its heartbeat and its
// commit. Every time the outcome is kept or replayed: the child runs once, the attempt is claimed
// once and committed once, nothing is lost. The codes are raised by a trigger on the real server;
// the resets happen in a fault proxy between the worker and the real server.
import { randomUUID } from 'node:crypto'
import { sql } from 'kysely'
import { getAttempt, type Db } from '@baton/store'
import {
  describe,
  eventually,
  expect,
  startFaultProxy,
  test,
  transitionEvents,
  type FaultProxy,
} from '@baton/testing'
import { duplicateTerminalAttempts } from '@baton/testing/ledger-audit'
import type { WorkerRuntime } from '../src/runtime.ts'
import {
  accept,
  enqueue,
  injectUpdateFault,
  startRuntime,
  untilTerminal,
  type WorkerTestContext,
} from './support/worker-harness.ts'
import { witnessedChild, witnessedPrompt, type WitnessedChild } from './support/witnessed-child.ts'

/** The codes a failover, an overloaded or restarting server, or a cancel answers with. */
const FAILOVER_CODES = [
  '57P01', // admin_shutdown
  '57P02', // crash_shutdown
  '57P03', // cannot_connect_now
  '25006', // read_only_sql_transaction
  '53300', // too_many_connections
  '53400', // configuration_limit_exceeded
  '57014', // query_canceled
  '55P03', // lock_not_available
  '40001', // serialization_failure
  '40P01', // deadlock_detected
  '08006', // connection_failure
] as const

interface Harness {
  readonly db: Db
  readonly proxy: FaultProxy
  readonly child: WitnessedChild
  readonly runtime: WorkerRuntime
  readonly ctx: WorkerTestContext
}

/** A worker whose ledger connections go through a fault proxy. */
async function harness(
  ctx: WorkerTestContext & { readonly db: Db },
): Promise<Harness & { close(): Promise<void> }> {
  const proxy = ctx.track(await startFaultProxy(ctx.databaseUrl))
  const child = witnessedChild()
  const runtime = await startRuntime({ ...ctx, databaseUrl: proxy.url }, child.provider, {
    LEASE_TTL_MS: '4000',
    HEARTBEAT_INTERVAL_MS: '300',
    DB_STATEMENT_TIMEOUT_MS: '2000',
  })
  return {
    db: ctx.db,
    proxy,
    child,
    runtime,
    ctx,
    async close() {
      await runtime.shutdownChecked(10_000)
      await proxy.close()
    },
  }
}

/** The attempt ended as its child answered, claimed once, committed once, its child run once. */
async function expectKept(h: Harness, attemptId: string, prompt: string, output: string) {
  const view = await untilTerminal(h.db, attemptId)
  expect(view).toMatchObject({ status: 'terminal', stopReason: 'completed', output })
  expect(await transitionEvents(h.db, attemptId)).toEqual(['accepted', 'claimed', 'committed'])
  expect(h.child.starts(prompt)).toBe(1)
}

/**
 * One attempt per failover code, each with the first `times` updates of `point` failing with it:
 * every one is kept (and the trigger was hit as often as it was told to fail).
 */
async function throughEveryCode(
  h: Harness,
  point: 'claim' | 'renewal' | 'terminal',
  times: number,
  delayMs = 0,
): Promise<void> {
  for (const code of FAILOVER_CODES) {
    const output = `${point}-${code}-${randomUUID()}`
    const prompt = witnessedPrompt(output, delayMs)
    const attemptId = await accept(h.db, prompt)
    const fault = await injectUpdateFault(h.db, { attemptId, on: point, sqlstate: code, times })
    await enqueue(h.ctx, attemptId)
    await expectKept(h, attemptId, prompt, output)
    expect(await fault.hits(), code).toBeGreaterThanOrEqual(times)
    await fault.remove()
  }
}

async function heartbeatAt(db: Db, attemptId: string): Promise<number> {
  const r = await sql<{ at: Date | null }>`
    select heartbeat_at as at from attempts where id = ${attemptId}
  `.execute(db)
  return r.rows[0]?.at?.getTime() ?? 0
}

describe('failover codes and connection resets at every point a worker writes', () => {
  test('mid-claim: the claim is retried, and one whose answer was lost is recognised as its own', async ({
    services,
  }) => {
    const { db } = services
    const h = await harness(services)
    try {
      await throughEveryCode(h, 'claim', 1)
      // The claim applied, its answer lost to a reset connection.
      const output = `claim-reset-${randomUUID()}`
      const prompt = witnessedPrompt(output)
      const attemptId = await accept(db, prompt)
      const held = h.proxy.holdAnswerAfter(attemptId)
      await enqueue(h.ctx, attemptId)
      const answer = await held
      await eventually(async () =>
        (await transitionEvents(db, attemptId)).includes('claimed') ? true : undefined,
      )
      answer.reset()
      await expectKept(h, attemptId, prompt, output)
    } finally {
      await h.close()
    }
  })

  test('mid-heartbeat: ownership is kept and the next beat renews; the child runs on to its commit', async ({
    services,
  }) => {
    const { db } = services
    const h = await harness(services)
    try {
      await throughEveryCode(h, 'renewal', 2, 1_500)
      // A renewal applied, its answer lost to a reset connection.
      const output = `beat-reset-${randomUUID()}`
      const prompt = witnessedPrompt(output, 2_000)
      const attemptId = await accept(db, prompt)
      await enqueue(h.ctx, attemptId)
      await eventually(async () => (h.child.starts(prompt) === 1 ? true : undefined))
      const before = await heartbeatAt(db, attemptId)
      const answer = await h.proxy.holdAnswerAfter(attemptId)
      await eventually(async () => ((await heartbeatAt(db, attemptId)) > before ? true : undefined))
      answer.reset()
      await expectKept(h, attemptId, prompt, output)
    } finally {
      await h.close()
    }
  })

  test('mid-commit: the commit is retried, and one whose answer was lost is replayed exactly', async ({
    services,
  }) => {
    const { db } = services
    const h = await harness(services)
    try {
      // More failures than an unexpected error is tried: only a transient one keeps the result.
      await throughEveryCode(h, 'terminal', 4)
      // The commit applied, its answer lost to a reset connection: only the commit carries the
      // child's output to the ledger.
      const output = `commit-reset-${randomUUID()}`
      const prompt = witnessedPrompt(output)
      const attemptId = await accept(db, prompt)
      const held = h.proxy.holdAnswerAfter(output)
      await enqueue(h.ctx, attemptId)
      const answer = await held
      await eventually(async () =>
        (await getAttempt(db, attemptId))?.status === 'terminal' ? true : undefined,
      )
      answer.reset()
      await expectKept(h, attemptId, prompt, output)
      expect(await duplicateTerminalAttempts(db)).toEqual([])
    } finally {
      await h.close()
    }
  })
})
