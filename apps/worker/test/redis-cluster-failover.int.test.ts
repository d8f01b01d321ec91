// A master of the Redis Cluster dies under load (SIGKILL) while an API and two workers run Baton's
// attempt queue in 8 partitions on it. Its replica takes its slots over; Baton's connections wait
// the failover out instead of failing, so no enqueue fails, and the attempts whose jobs the dead
// master took with it are re-enqueued by the reconciler: every attempt ends within one reconcile
// interval plus one lease TTL of the cluster being whole again, none is lost, none ends twice, and
// no child runs twice (the execution witness, outside the ledger, counts the starts).
import { randomUUID } from 'node:crypto'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import {
  delegationsPath,
  describe,
  eventually,
  expect,
  startRedisCluster,
  test,
} from '@baton/testing'
import { auditExecutionWitness, auditLedger } from '@baton/testing/ledger-audit'
import { WITNESSED, readWitness, writeWitnessSpec } from '@baton/testing/witness'
import { clusterEnv, linesWith, untilAllTerminal } from './support/redis-cluster-load.ts'

const LEASE_TTL_MS = 10_000
const RECONCILE_INTERVAL_MS = 1_000
/**
 * Clients submitting in a closed loop: each submits one delegation and waits (one bounded wait)
 * for it to end before the next. The load keeps pace with the machine however busy it is, so what
 * the failover delays is not hidden behind a backlog.
 */
const CLIENTS = 16
const WAIT_BOUND_MS = 5_000

describe('a Redis Cluster master failover under load', () => {
  test(
    'the replica takes over; every attempt ends in time, none lost, none ended or run twice',
    { timeout: 300_000 },
    async ({ baton, db, queuePrefix, track }) => {
      const dir = await mkdtemp(join(tmpdir(), 'baton-failover-'))
      const witnessFile = await writeWitnessSpec(dir, dir, { workMs: 100 })
      const cluster = track(await startRedisCluster())
      const stack = await baton({
        workers: 2,
        env: { ...clusterEnv(cluster), SUBAGENTS_DIR: dir },
        workerEnv: {
          LEASE_TTL_MS: String(LEASE_TTL_MS),
          HEARTBEAT_INTERVAL_MS: String(LEASE_TTL_MS / 5),
          RECONCILE_INTERVAL_MS: String(RECONCILE_INTERVAL_MS),
        },
        readyTimeoutMs: 90_000,
        // The rate limiter counts in the cluster too.
        apiEnv: { RATE_LIMIT_MAX: '1000000' },
      })
      const accepted: string[] = []
      const refused: string[] = []
      let submitting = true
      const client = async (c: number): Promise<void> => {
        for (let i = 0; submitting; i += 1) {
          // One in four witnessed, the rest scripted; sessions spread over every partition.
          const session = `failover-${c}-${i % 16}`
          const witnessed = i % 4 === 0
          const answer = await stack.post(delegationsPath(session), {
            name: witnessed ? WITNESSED : 'scripted',
            prompt: witnessed
              ? `failover-${randomUUID()}`
              : JSON.stringify({ output: 'ok', delayMs: 50 }),
          })
          if (answer.status !== 202) {
            refused.push(`${answer.status} ${JSON.stringify(answer.body)}`)
            await sleep(100)
            continue
          }
          const { attemptId } = answer.body as { attemptId: string }
          accepted.push(attemptId)
          // Its answer (terminal, or a snapshot at the bound while a failover delays it) is not
          // what this client checks: the audit below is.
          await stack.get(`/v1/attempts/${attemptId}/wait?timeoutMs=${WAIT_BOUND_MS}`)
        }
      }
      const load = Promise.all(Array.from({ length: CLIENTS }, (_, c) => client(c)))
      try {
        // Under way: children run.
        await eventually(
          async () =>
            (await readWitness(witnessFile)).size >= 10 && accepted.length >= 80 ? true : undefined,
          { timeoutMs: 120_000, intervalMs: 250, what: 'the load to be under way' },
        )
        const busiest = await cluster.busiestMaster(`*${queuePrefix}*`)
        const replica = await cluster.replicaOf(busiest.server)
        expect(replica, 'the busiest master has a replica').toBeDefined()
        const killedAt = Date.now()
        await busiest.server.crash()
        // Settled: the replica serves the dead master's slots, every slot is served.
        await cluster.waitHealthy(60_000)
        const promotedMs = Date.now() - killedAt
        const promoted = (await cluster.masters()).find((m) => m.server === replica)
        expect(promoted?.slots).toEqual(busiest.slots)
        submitting = false
        await load
        const settledAt = Date.now()
        await untilAllTerminal(db, stack, accepted, 180_000)
        const endedMs = Date.now() - settledAt
        process.stdout.write(
          `${JSON.stringify({
            test: 'redis-cluster-failover',
            accepted: accepted.length,
            promoted_ms: promotedMs,
            all_ended_after_settle_ms: endedMs,
          })}\n`,
        )
        expect(endedMs).toBeLessThanOrEqual(RECONCILE_INTERVAL_MS + LEASE_TTL_MS)

        expect(refused).toEqual([])
        // Every enqueue outlasted the failover: none was left to the reconciler by an error.
        expect(linesWith(stack, 'enqueue failed')).toEqual([])
        expect(linesWith(stack, 'CROSSSLOT')).toEqual([])
        expect(await auditLedger(db, accepted)).toMatchObject({
          lost: 0,
          stuck: 0,
          duplicate_terminal: 0,
          duplicate_execution: 0,
          orphan_transitions: 0,
        })
        const witness = await auditExecutionWitness(db, WITNESSED, await readWitness(witnessFile))
        expect(witness.bad, witness.samples.join('\n')).toBe(0)
        expect(witness.starts).toBeGreaterThan(0)
      } finally {
        submitting = false
        await load.catch(() => undefined)
        await stack.close()
        await cluster.close()
        await rm(dir, { recursive: true, force: true })
      }
    },
  )
})
