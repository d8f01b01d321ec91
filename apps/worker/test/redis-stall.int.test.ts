// Redis stops answering for 30 s (a fault proxy between the worker and the real server stalls
// every connection, new ones too). The reconciler's ledger work goes on meanwhile: process loss
// is recorded, expired artifacts lose their content, a lapsed continuation claim is released.
// Its Redis work catches up once Redis answers: the attempt that had no job is enqueued and runs,
// the bell of the process loss rings.
import { randomUUID } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import { sql } from 'kysely'
import { createSettlementListener } from '@baton/queue'
import {
  acceptDelegations,
  claimAttempt,
  claimContinuation,
  commitTerminal,
  createRun,
  endRun,
  getAttempt,
  getContinuation,
  type Db,
} from '@baton/store'
import { describe, eventually, expect, startFaultProxy, test } from '@baton/testing'
import { accept, startRuntime, untilTerminal } from './support/worker-harness.ts'
import { witnessedChild, witnessedPrompt } from './support/witnessed-child.ts'

const NS = 'default'
const STALL_MS = 30_000

/** A delegation of a run that then ended, claimed by `ownerId` for `leaseTtlMs`. */
async function delegation(db: Db, ownerId: string, leaseTtlMs: number) {
  const sessionId = `stall-${randomUUID()}`
  const runId = randomUUID()
  const created = await createRun(db, {
    namespaceId: NS,
    sessionId,
    runId,
    consume: [],
    leaseMs: 60_000,
  })
  if (created.kind !== 'created') throw new Error(created.kind)
  const attemptId = randomUUID()
  await acceptDelegations(db, [
    {
      namespaceId: NS,
      sessionId,
      name: 'scripted',
      prompt: [{ type: 'text', text: 'x' }],
      metadata: {},
      attemptId,
      newAgentId: randomUUID(),
      parentRunId: runId,
    },
  ])
  const claim = await claimAttempt(db, { attemptId, ownerId, leaseTtlMs })
  if (claim.kind !== 'claimed') throw new Error(claim.kind)
  // The parent run ends before the result lands: the result is admitted as a continuation.
  await endRun(db, { namespaceId: NS, runId, status: 'completed' })
  return { sessionId, attemptId, generation: claim.attempt.ownerGeneration }
}

describe('a Redis that stalls for 30 s', () => {
  test(
    "the reconciler's ledger work goes on, and its Redis work catches up after",
    { timeout: 120_000 },
    async ({ services }) => {
      const { db, databaseUrl, redisUrl, queuePrefix, track } = services
      const proxy = track(await startFaultProxy(redisUrl))
      const child = witnessedChild()
      const runtime = await startRuntime(
        { databaseUrl, redisUrl: proxy.url, queuePrefix, track },
        child.provider,
        {
          RECONCILE_INTERVAL_MS: '200',
          REQUEUE_AFTER_MS: '300',
          // Far longer than the ledger work needs: a pass that waited on Redis would fall behind.
          REDIS_COMMAND_TIMEOUT_MS: '10000',
          REDIS_CONNECT_TIMEOUT_MS: '10000',
        },
      )
      const heard: string[] = []
      const listener = createSettlementListener({
        redisUrl,
        prefix: queuePrefix,
        onEvent: (event) => heard.push(event.attemptId),
        blockingTimeoutMs: 200,
      })
      try {
        await listener.ready()
        proxy.stall()
        const stalledAt = performance.now()

        // An attempt accepted meanwhile has no job (its enqueue would wait for Redis), and is old
        // enough for every pass to try to enqueue it again.
        const prompt = witnessedPrompt(`no-job-${randomUUID()}`)
        const unqueued = await accept(db, prompt)
        await sql`
          update attempts set created_at = now() - interval '1 minute' where id = ${unqueued}
        `.execute(db)

        // An owner that vanished: its lease lapses.
        const orphan = await delegation(db, 'vanished', 100)
        // An artifact whose retention ended.
        const stored = await delegation(db, 'w-artifact', 60_000)
        await commitTerminal(db, {
          attemptId: stored.attemptId,
          ownerId: 'w-artifact',
          ownerGeneration: stored.generation,
          result: { stopReason: 'completed', output: 'y'.repeat(10_000), failureCategory: null },
        })
        await sql`
          update artifacts set expires_at = now() - interval '1 second' where attempt_id = ${stored.attemptId}
        `.execute(db)
        // A continuation claimed by a consumer whose claim lapsed.
        const settled = await delegation(db, 'w-continuation', 60_000)
        await commitTerminal(db, {
          attemptId: settled.attemptId,
          ownerId: 'w-continuation',
          ownerGeneration: settled.generation,
          result: { stopReason: 'completed', output: 'done', failureCategory: null },
        })
        const consumer = await claimContinuation(db, {
          namespaceId: NS,
          sessionId: settled.sessionId,
          claimToken: 'h1',
          leaseMs: 60_000,
        })
        expect(consumer?.attemptId).toBe(settled.attemptId)
        await sql`update runs set lease_expires_at = now() - interval '1 second' where id = ${consumer?.runId ?? ''}::uuid`.execute(
          db,
        )
        await sql`update continuations set claim_deadline = now() - interval '1 second' where attempt_id = ${settled.attemptId}`.execute(
          db,
        )

        // All three happen while Redis still answers nothing, within a few reconcile passes.
        const within = { timeoutMs: 5_000, intervalMs: 100 }
        await eventually(
          async () =>
            (await getAttempt(db, orphan.attemptId))?.failureCategory === 'process_lost'
              ? true
              : undefined,
          { ...within, what: 'process loss recorded during the stall' },
        )
        await eventually(
          async () => {
            const r = await sql<{ expired: boolean }>`
            select expired_at is not null
                   and not exists (select 1 from artifact_chunks c where c.upload_id = artifacts.upload_id)
                   as expired
            from artifacts
            where attempt_id = ${stored.attemptId}
          `.execute(db)
            return r.rows[0]?.expired === true ? true : undefined
          },
          { ...within, what: 'the artifact expired during the stall' },
        )
        await eventually(
          async () =>
            (await getContinuation(db, NS, { attemptId: settled.attemptId }))?.state === 'pending'
              ? true
              : undefined,
          { ...within, what: 'the lapsed continuation claim released during the stall' },
        )
        expect(performance.now() - stalledAt).toBeLessThan(STALL_MS)
        expect((await getAttempt(db, unqueued))?.status).toBe('accepted')

        await sleep(Math.max(0, STALL_MS - (performance.now() - stalledAt)))
        proxy.resume()

        // The Redis work catches up: the attempt without a job is enqueued and runs, and the bell
        // of the process loss rings.
        expect(await untilTerminal(db, unqueued)).toMatchObject({ stopReason: 'completed' })
        expect(child.starts(prompt)).toBe(1)
        await eventually(async () => (heard.includes(orphan.attemptId) ? true : undefined), {
          what: 'the bell of the process loss',
        })
      } finally {
        proxy.resume()
        await listener.close()
        await runtime.shutdownChecked(20_000)
        await proxy.close()
      }
    },
  )
})
