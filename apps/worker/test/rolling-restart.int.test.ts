// A deploy: every worker of a fleet restarted one by one (SIGTERM, exit, a new one in its place)
// while delegations keep arriving. An attempt whose child had not started when its worker stopped
// goes back to the queue: none ends `shutdown` without a start its child recorded (the execution
// witness, outside the ledger), none runs twice, and every one ends.
import { randomUUID } from 'node:crypto'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { sql } from 'kysely'
import { acceptDelegations, type Db } from '@baton/store'
import { describe, eventually, expect, test } from '@baton/testing'
import { duplicateExecutionAttempts } from '@baton/testing/ledger-audit'
import { WITNESSED, readWitness, writeWitnessSpec } from '@baton/testing/witness'
import { enqueue } from './support/worker-harness.ts'

const WORKERS = 3

async function acceptWitnessed(db: Db, token: string): Promise<string> {
  const attemptId = randomUUID()
  await acceptDelegations(db, [
    {
      namespaceId: 'default',
      sessionId: 'rolling-restart',
      name: WITNESSED,
      prompt: [{ type: 'text', text: token }],
      metadata: {},
      attemptId,
      newAgentId: randomUUID(),
    },
  ])
  return attemptId
}

describe('a rolling restart of every worker under load', () => {
  test(
    'no attempt ends shutdown that had not started, none runs twice, and every one ends',
    { timeout: 180_000 },
    async ({ baton, db, redisUrl, queuePrefix }) => {
      const dir = await mkdtemp(join(tmpdir(), 'baton-rolling-'))
      const witnessFile = await writeWitnessSpec(dir, dir, { workMs: 2_000 })
      const fleet = await baton({
        api: false,
        workers: WORKERS,
        env: {
          SUBAGENTS_DIR: dir,
          WORKER_CONCURRENCY: '4',
          SHUTDOWN_DEADLINE_MS: '15000',
          // No worker dies here, so no lease has to expire for the test to end: a lease long
          // enough that a machine busy with other work cannot make a live child look lost
          // (the tests' default 1.5 s did, under a CI run beside other work).
          LEASE_TTL_MS: '15000',
          HEARTBEAT_INTERVAL_MS: '1000',
        },
      })
      const attempts = new Map<string, string>()
      let submitting = true
      const load = (async () => {
        for (let i = 0; submitting; i += 1) {
          const token = `rolling-${i}-${randomUUID()}`
          const attemptId = await acceptWitnessed(db, token)
          attempts.set(attemptId, token)
          await enqueue({ redisUrl, queuePrefix }, attemptId)
          await sleep(100)
        }
      })()
      try {
        await eventually(
          async () => ((await readWitness(witnessFile)).size >= 5 ? true : undefined),
          { timeoutMs: 30_000 },
        )
        // One by one: stop a worker (its drain ends its running children), start its successor.
        for (const old of [...fleet.workers]) {
          expect(await fleet.killWorker(old, 'SIGTERM')).toBe(0)
          await fleet.startWorker()
        }
        submitting = false
        await load
        await eventually(
          async () => {
            const r = await sql<{ n: number }>`
              select count(*)::int as n from attempts
              where id = any(${[...attempts.keys()]}::uuid[]) and status <> 'terminal'
            `.execute(db)
            return r.rows[0]?.n === 0 ? true : undefined
          },
          { timeoutMs: 90_000, intervalMs: 250, what: 'every attempt to end' },
        )

        const starts = await readWitness(witnessFile)
        const ended = await sql<{
          id: string
          stop_reason: string
          failure_category: string | null
        }>`
          select id, stop_reason, failure_category from attempts
          where id = any(${[...attempts.keys()]}::uuid[])
        `.execute(db)
        const shutdownUnstarted = ended.rows.filter(
          (a) =>
            a.failure_category === 'shutdown' && (starts.get(attempts.get(a.id) ?? '') ?? 0) === 0,
        )
        expect(shutdownUnstarted).toEqual([])
        expect([...starts.values()].filter((n) => n > 1)).toEqual([])
        expect(ended.rows.filter((a) => a.failure_category === 'process_lost')).toEqual([])
        expect(await duplicateExecutionAttempts(db)).toEqual([])
      } finally {
        submitting = false
        await load
        await fleet.close()
        await rm(dir, { recursive: true, force: true })
      }
    },
  )
})
