// Postgres stalls under load, between two workers and the real server: the connections that were
// open stop answering (a failover's half-dead connections), or every connection does. No child that
// finished is turned into a failure it did not have, and no child runs without a live lease for
// longer than one heartbeat past it (one lease TTL plus one heartbeat after its last renewal):
// checked from the execution witness (when each child ran) against every lease the ledger granted.
import { randomUUID } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
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
import type { WorkerRuntime } from '../src/runtime.ts'
import { accept, enqueue, startRuntime, type WorkerTestContext } from './support/worker-harness.ts'
import { recordLeases, uncoveredStretches, type LeaseLog } from './support/lease-witness.ts'
import { witnessedChild, witnessedPrompt, type WitnessedChild } from './support/witnessed-child.ts'

const LEASE_TTL_MS = 3_000
const HEARTBEAT_INTERVAL_MS = 500
const WORKERS = 2

interface Load {
  readonly attempts: Map<string, string>
  stop(): Promise<void>
}

/**
 * Delegations arriving every `everyMs` until stopped, their children running 0.2–3 s, every fifth
 * one 5–12 s (longer than a lease, so that a stall finds some of them mid-run).
 */
function startLoad(ctx: WorkerTestContext & { readonly db: Db }, everyMs: number): Load {
  const attempts = new Map<string, string>()
  let stopped = false
  const loop = (async () => {
    for (let i = 0; !stopped; i += 1) {
      const delayMs =
        i % 5 === 0
          ? 5_000 + Math.floor(Math.random() * 7_000)
          : 200 + Math.floor(Math.random() * 2_800)
      const prompt = witnessedPrompt(`load-${randomUUID()}`, delayMs)
      const attemptId = await accept(ctx.db, prompt)
      attempts.set(attemptId, prompt)
      await enqueue(ctx, attemptId)
      await sleep(everyMs)
    }
  })()
  return {
    attempts,
    async stop() {
      stopped = true
      await loop
    },
  }
}

interface Fleet {
  readonly proxy: FaultProxy
  readonly child: WitnessedChild
  readonly leases: LeaseLog
  readonly workers: readonly WorkerRuntime[]
  close(): Promise<void>
}

async function startFleet(ctx: WorkerTestContext & { readonly db: Db }): Promise<Fleet> {
  const proxy = ctx.track(await startFaultProxy(ctx.databaseUrl))
  const child = witnessedChild()
  const leases = await recordLeases(ctx.db)
  const workers = await Promise.all(
    Array.from({ length: WORKERS }, () =>
      startRuntime({ ...ctx, databaseUrl: proxy.url }, child.provider, {
        LEASE_TTL_MS: String(LEASE_TTL_MS),
        HEARTBEAT_INTERVAL_MS: String(HEARTBEAT_INTERVAL_MS),
        DB_STATEMENT_TIMEOUT_MS: '1000',
        DB_CONNECT_TIMEOUT_MS: '1000',
        RECONCILE_INTERVAL_MS: '500',
        REQUEUE_AFTER_MS: '2000',
        WORKER_CONCURRENCY: '50',
      }),
    ),
  )
  return {
    proxy,
    child,
    leases,
    workers,
    async close() {
      proxy.resume()
      await Promise.all(workers.map((w) => w.shutdownChecked(20_000)))
      await proxy.close()
      await leases.remove()
    },
  }
}

async function endings(db: Db, ids: Iterable<string>) {
  const r = await sql<{ id: string; stop_reason: string | null; failure_category: string | null }>`
    select id, stop_reason, failure_category from attempts where id = any(${[...ids]}::uuid[])
  `.execute(db)
  return r.rows
}

/** Every attempt of `load` terminal (bounded far above the time the fleet needs). */
async function allTerminal(db: Db, load: Load): Promise<void> {
  await eventually(
    async () => {
      for (const id of load.attempts.keys())
        if ((await getAttempt(db, id))?.status !== 'terminal') return undefined
      return true
    },
    { timeoutMs: 90_000, intervalMs: 250, what: 'every attempt to be terminal' },
  )
}

/** No child ran without a live lease past one heartbeat; no child ran twice; claimed once. */
async function expectLeasedRuns(db: Db, fleet: Fleet, load: Load): Promise<void> {
  const grants = await fleet.leases.grants()
  const violations: string[] = []
  for (const [attemptId, prompt] of load.attempts) {
    const runs = fleet.child.runs.get(prompt) ?? []
    expect(runs.length, attemptId).toBeLessThanOrEqual(1)
    for (const run of runs) {
      const gaps = uncoveredStretches(run, grants.get(attemptId) ?? [], HEARTBEAT_INTERVAL_MS)
      for (const gap of gaps)
        violations.push(`${attemptId}: ran ${gap.to - gap.from} ms without a live lease`)
    }
    const claims = (await transitionEvents(db, attemptId)).filter((e) => e === 'claimed')
    expect(claims.length, attemptId).toBe(1)
  }
  expect(violations).toEqual([])
}

/**
 * A fleet under load whose Postgres stalls (`existingOnly`: only the connections open then) for
 * `stallMs` once ten children run; resolves once every attempt of the load ended, with the
 * attempts' endings. The caller checks, then closes.
 */
async function stallUnderLoad(
  ctx: WorkerTestContext & { readonly db: Db },
  stall: { readonly ms: number; readonly existingOnly: boolean },
) {
  const fleet = await startFleet(ctx)
  const load = startLoad(ctx, 150)
  const close = async (): Promise<void> => {
    await load.stop()
    await fleet.close()
  }
  try {
    await eventually(async () => (fleet.child.running() >= 10 ? true : undefined))
    const stalledAt = Date.now()
    fleet.proxy.stall({ existingOnly: stall.existingOnly })
    await sleep(stall.ms)
    fleet.proxy.resume()
    await load.stop()
    await allTerminal(ctx.db, load)
    const ended = await endings(ctx.db, load.attempts.keys())
    return { fleet, load, stalledAt, ended, close }
  } catch (error) {
    await close()
    throw error
  }
}

describe('a Postgres that stalls under load', () => {
  test(
    'every open connection stops answering for 30 s: leases are renewed, and every child that finished commits its result',
    { timeout: 180_000 },
    async ({ services }) => {
      const { db } = services
      const ctx = services
      const run = await stallUnderLoad(ctx, { ms: 30_000, existingOnly: true })
      try {
        expect(run.ended.filter((a) => a.failure_category !== null)).toEqual([])
        expect(run.ended.every((a) => a.stop_reason === 'completed')).toBe(true)
        await expectLeasedRuns(db, run.fleet, run.load)
      } finally {
        await run.close()
      }
    },
  )

  test(
    'every connection, new ones too, stops answering for longer than a lease: children stop before their leases lapse, and nothing else is lost',
    { timeout: 180_000 },
    async ({ services }) => {
      const { db } = services
      const ctx = services
      const run = await stallUnderLoad(ctx, { ms: LEASE_TTL_MS * 3, existingOnly: false })
      try {
        expect(run.ended.filter((a) => a.failure_category === 'store_fault')).toEqual([])
        // Only a child that ended while no commit could reach the ledger ends as process loss.
        for (const attempt of run.ended.filter((a) => a.failure_category === 'process_lost')) {
          const prompt = run.load.attempts.get(attempt.id) ?? ''
          const ran = run.fleet.child.runs.get(prompt)?.[0]
          expect(ran?.endedAt, attempt.id).toBeGreaterThanOrEqual(run.stalledAt)
        }
        await expectLeasedRuns(db, run.fleet, run.load)
      } finally {
        await run.close()
      }
    },
  )
})
