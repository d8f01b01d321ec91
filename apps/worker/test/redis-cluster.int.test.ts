// Baton on a Redis Cluster (3 masters, 3 replicas, private redis-server processes) with the attempt
// queue in 8 partitions: an API and two worker processes under load. Every partition's keys live
// on the one master that serves its hash tag's slot, no process ever sees CROSSSLOT, and the
// ledger stays whole; then the busiest master is killed under load and its replica takes over
// without an attempt lost, committed twice or run twice.
import { randomUUID } from 'node:crypto'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { sql } from 'kysely'
import type { Db } from '@baton/store'
import {
  delegationsPath,
  describe,
  eventually,
  expect,
  startRedisCluster,
  test,
  type BatonStack,
  type RedisClusterServers,
} from '@baton/testing'
import { auditExecutionWitness, auditLedger } from '@baton/testing/ledger-audit'
import { WITNESSED, readWitness, writeWitnessSpec } from '@baton/testing/witness'

const PARTITIONS = 8

/** The environment that puts both apps on the cluster, partitioned. */
const clusterEnv = (cluster: RedisClusterServers): Record<string, string> => ({
  QUEUE_PARTITIONS: String(PARTITIONS),
  REDIS_CLUSTER_NODES: cluster.nodeList,
})

/** Submits `prompt(i)` to subagent `name` in one of `sessions` sessions; answers the attempt id. */
async function submit(
  stack: BatonStack,
  name: string,
  session: string,
  prompt: string,
): Promise<string> {
  const answer = await stack.post(delegationsPath(session), { name, prompt })
  expect(answer.status, JSON.stringify(answer.body)).toBe(202)
  return (answer.body as { attemptId: string }).attemptId
}

async function untilAllTerminal(db: Db, ids: readonly string[], timeoutMs: number): Promise<void> {
  await eventually(
    async () => {
      const r = await sql<{ n: number }>`
        select count(*)::int as n from attempts
        where id = any(${[...ids]}::uuid[]) and status <> 'terminal'
      `.execute(db)
      return r.rows[0]?.n === 0 ? true : undefined
    },
    { timeoutMs, intervalMs: 250, what: 'every attempt to end' },
  )
}

/** Every Baton key of the cluster, by the master that holds it. */
async function keysByMaster(
  cluster: RedisClusterServers,
  queuePrefix: string,
): Promise<Map<number, string[]>> {
  const byMaster = new Map<number, string[]>()
  for (const master of await cluster.masters()) {
    byMaster.set(master.server.port, await cluster.keysOn(master.server, `*${queuePrefix}*`))
  }
  return byMaster
}

/** What the processes printed that a cluster refuses: a multi-key command across slots. */
const crossSlotLines = (stack: BatonStack): string[] =>
  [stack.api, ...stack.workers]
    .flatMap((p) => p.output().split('\n'))
    .filter((line) => line.includes('CROSSSLOT'))

describe('queue partitions on a Redis Cluster', () => {
  test(
    "routing: every partition's keys on its slot's master, no CROSSSLOT, every attempt ends",
    { timeout: 240_000 },
    async ({ baton, db, queuePrefix, track }) => {
      const cluster = track(await startRedisCluster())
      const stack = await baton({
        workers: 2,
        env: clusterEnv(cluster),
        // Every partition's readers connect to the cluster before a process says it is ready.
        readyTimeoutMs: 90_000,
        // The rate limiter counts in the cluster too.
        apiEnv: { RATE_LIMIT_MAX: '1000000' },
      })
      try {
        const sessions = Array.from({ length: 32 }, (_, i) => `routing-${i}`)
        const accepted: string[] = []
        // Bursts of concurrent submits, so enqueues of several partitions share batches.
        for (let round = 0; round < 6; round += 1) {
          accepted.push(
            ...(await Promise.all(
              sessions.map((session) =>
                submit(stack, 'scripted', session, JSON.stringify({ output: 'ok', delayMs: 20 })),
              ),
            )),
          )
        }
        await untilAllTerminal(db, accepted, 120_000)

        const byMaster = await keysByMaster(cluster, queuePrefix)
        const tags = new Map<string, Set<number>>()
        for (const [port, keys] of byMaster) {
          for (const key of keys) {
            if (key.includes(':rate-limit:')) continue
            // Every queue and stream key is in a partition: under its `{prefix:p<i>}` tag.
            const tag = /^\{([^}]+)\}/.exec(key)?.[1]
            expect(tag, key).toMatch(new RegExp(`^${queuePrefix}:p[0-7]$`))
            const masters = tags.get(tag as string) ?? new Set<number>()
            masters.add(port)
            tags.set(tag as string, masters)
          }
        }
        // Every partition was used, each lives on one master: the one serving its tag's slot.
        expect([...tags.keys()].sort()).toEqual(
          Array.from({ length: PARTITIONS }, (_, i) => `${queuePrefix}:p${i}`).sort(),
        )
        const masters = await cluster.masters()
        for (const [tag, ports] of tags) {
          const slot = await cluster.keySlot(tag)
          const owner = masters.find((m) =>
            m.slots.some(([from, to]) => slot >= from && slot <= to),
          )
          expect([...ports], tag).toEqual([owner?.server.port])
        }
        // The partitions are spread: more than one master holds some.
        expect(new Set([...tags.values()].flatMap((p) => [...p])).size).toBeGreaterThan(1)

        expect(crossSlotLines(stack)).toEqual([])
        expect(await auditLedger(db, accepted)).toMatchObject({
          lost: 0,
          stuck: 0,
          duplicate_terminal: 0,
          duplicate_execution: 0,
          orphan_transitions: 0,
        })
      } finally {
        await stack.close()
        await cluster.close()
      }
    },
  )

  test(
    'failover: the busiest master killed under load; none lost, committed twice or run twice',
    { timeout: 300_000 },
    async ({ baton, db, queuePrefix, track }) => {
      const cluster = track(await startRedisCluster())
      const dir = await mkdtemp(join(tmpdir(), 'baton-cluster-failover-'))
      const witnessFile = await writeWitnessSpec(dir, dir, { workMs: 1_500 })
      const stack = await baton({
        workers: 2,
        env: { ...clusterEnv(cluster), SUBAGENTS_DIR: dir },
        readyTimeoutMs: 90_000,
        workerEnv: { WORKER_CONCURRENCY: '8' },
      })
      const accepted: string[] = []
      let submitting = true
      const load = (async () => {
        for (let i = 0; submitting; i += 1) {
          const token = `failover-${i}-${randomUUID()}`
          accepted.push(await submit(stack, WITNESSED, `failover-${i % 16}`, token))
          await sleep(150)
        }
      })()
      try {
        await eventually(
          async () => ((await readWitness(witnessFile)).size >= 8 ? true : undefined),
          { timeoutMs: 60_000, what: 'witnessed children to start' },
        )
        // The busiest master: the one holding most of this run's keys.
        const byMaster = await keysByMaster(cluster, queuePrefix)
        const [busiest] = [...byMaster].sort((a, b) => b[1].length - a[1].length)
        const victim = cluster.nodes.find((n) => n.port === busiest?.[0])
        if (victim === undefined) throw new Error('no master holds a key')
        await victim.crash()
        // Its replica takes over: live masters serve every slot again, the victim among none.
        await cluster.waitHealthy(60_000)
        expect((await cluster.masters()).map((m) => m.server.port)).not.toContain(victim.port)
        // Load goes on across the failover and after it: children keep starting.
        const startedBefore = (await readWitness(witnessFile)).size
        await eventually(
          async () =>
            (await readWitness(witnessFile)).size >= startedBefore + 8 ? true : undefined,
          { timeoutMs: 60_000, what: 'children to start after the failover' },
        )
        submitting = false
        await load
        // Within a reconcile interval and a lease TTL of Redis answering again, in a test's
        // settings; the bound is generous.
        await untilAllTerminal(db, accepted, 120_000)

        expect(crossSlotLines(stack)).toEqual([])
        expect(await auditLedger(db, accepted)).toMatchObject({
          lost: 0,
          stuck: 0,
          duplicate_terminal: 0,
          duplicate_execution: 0,
          orphan_transitions: 0,
        })
        const witness = await auditExecutionWitness(db, WITNESSED, await readWitness(witnessFile))
        expect(witness.samples).toEqual([])
        expect(witness.bad).toBe(0)
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
