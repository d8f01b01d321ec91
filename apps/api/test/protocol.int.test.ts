import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createLogger } from '@baton/observability'
import { announceSettled, createSettlementPublisher } from '@baton/queue'
import { claimAttempt, commitTerminal, type Db } from '@baton/store'
import { describe, expect } from '@baton/testing'
import { apiTest, delegate, rowCounts, type ApiHarness } from './support/api-harness.ts'

const quiet = createLogger({ service: 'test', level: 'silent' })

/** Accepts a delegation and claims it as a worker would: `running`, and nothing will finish it. */
async function runningAttempt(h: ApiHarness, db: Db, session: string) {
  const accepted = await h.post(delegate(session), { name: 'scripted', prompt: 'x' })
  expect(accepted.status).toBe(202)
  const attemptId = accepted.body.attemptId as string
  const claim = await claimAttempt(db, { attemptId, ownerId: 'test-owner', leaseTtlMs: 60_000 })
  if (claim.kind !== 'claimed') throw new Error(claim.kind)
  return { attemptId, ownerGeneration: claim.attempt.ownerGeneration }
}

describe('API protocol rules', () => {
  apiTest(
    'a wait whose bound expires on a running attempt answers 200 with the running snapshot',
    async ({ api: harness, db }) => {
      const { attemptId } = await runningAttempt(harness, db, 's-bound')
      const started = performance.now()
      const waited = await harness.get(`/v1/attempts/${attemptId}/wait?timeoutMs=400`)
      expect(performance.now() - started).toBeGreaterThanOrEqual(390)
      expect(waited.status).toBe(200)
      expect(waited.body).toMatchObject({ attemptId, status: 'running' })
      expect(waited.body).not.toHaveProperty('stopReason')
    },
  )

  apiTest(
    'one wait is one doorbell-driven wait: a few ledger reads, however long the bound',
    async ({ inProcessApi, redisUrl, queuePrefix, db }) => {
      let statements = 0
      const countStatement = (): void => {
        statements += 1
      }
      const harness = await inProcessApi({}, { onQuery: countStatement })
      const { attemptId, ownerGeneration } = await runningAttempt(harness, db, 's-reads')

      const readsOfWait = async (timeoutMs: number) => {
        statements = 0
        const waited = await harness.get(`/v1/attempts/${attemptId}/wait?timeoutMs=${timeoutMs}`)
        expect(waited.body).toMatchObject({ status: 'running' })
        return statements
      }
      const short = await readsOfWait(200)
      const long = await readsOfWait(2_000)
      expect(long).toBeLessThanOrEqual(3)
      expect(long).toBe(short)

      // The bell, not a poll, ends a wait early: settle the attempt a moment into a long wait.
      const publisher = createSettlementPublisher({
        redisUrl,
        prefix: queuePrefix,
      })
      try {
        statements = 0
        const started = performance.now()
        const waiting = harness.get(`/v1/attempts/${attemptId}/wait?timeoutMs=20000`)
        await new Promise((resolve) => setTimeout(resolve, 300))
        const result = { stopReason: 'completed', output: 'rang', failureCategory: null }
        const fence = { attemptId, ownerId: 'test-owner', ownerGeneration }
        expect(await commitTerminal(db, { ...fence, result })).toBe('committed')
        await announceSettled(publisher, attemptId, quiet)
        const waited = await waiting
        expect(performance.now() - started).toBeLessThan(10_000)
        expect(waited.status).toBe(200)
        expect(waited.body).toMatchObject({ status: 'terminal', output: 'rang' })
        expect(statements).toBeLessThanOrEqual(3)
      } finally {
        await publisher.close()
      }
    },
  )

  apiTest(
    'an agentId of another session or another subagent is 404 AGENT_NOT_FOUND and writes nothing',
    async ({ inProcessApi, db }) => {
      const dir = await mkdtemp(join(tmpdir(), 'baton-protocol-'))
      try {
        await writeFile(
          join(dir, 'researcher.md'),
          '---\nname: researcher\ndescription: reads\nmodel: scripted:research\n---\nRead.\n',
        )
        const harness = await inProcessApi({ SUBAGENTS_DIR: dir })
        const first = await harness.post(delegate('s-own'), { name: 'scripted', prompt: 'one' })
        expect(first.status).toBe(202)
        const agentId = first.body.agentId as string
        // Terminal, so the agent itself may be continued: only the session and name can refuse it.
        const cancelled = await harness.post(`/v1/attempts/${first.body.attemptId}/cancel`, {})
        expect(cancelled.body).toMatchObject({ outcome: 'cancelled_queued' })

        const before = await rowCounts(db)
        const refused = [
          harness.post(delegate('s-other'), { name: 'scripted', prompt: 'two', agentId }),
          harness.post(delegate('s-own'), { name: 'researcher', prompt: 'two', agentId }),
          harness.post(
            delegate('s-other'),
            { name: 'scripted', prompt: 'two', agentId },
            { 'idempotency-key': 'k-1' },
          ),
        ]
        for (const answer of await Promise.all(refused)) {
          expect(answer.status).toBe(404)
          expect(answer.body.error.code).toBe('AGENT_NOT_FOUND')
        }
        expect(await rowCounts(db)).toEqual(before)

        // The same agent in its own session under its own name is continued.
        const continued = await harness.post(delegate('s-own'), {
          name: 'scripted',
          prompt: 'two',
          agentId,
        })
        expect(continued.status).toBe(202)
        expect(continued.body.agentId).toBe(agentId)
        await harness.api.close()
      } finally {
        await rm(dir, { recursive: true, force: true })
      }
    },
  )
})
