// Baton on a Redis Cluster (3 masters, 3 replicas, private redis-server processes) with the attempt
// queue in 8 partitions: an API and two worker processes under load. Every partition's keys live
// on the one master that serves its hash tag's slot, no process ever sees CROSSSLOT, and the
// ledger stays whole.
import { describe, expect, startRedisCluster, test, type RedisClusterServers } from '@baton/testing'
import { auditLedger } from '@baton/testing/ledger-audit'
import {
  PARTITIONS,
  clusterEnv,
  linesWith,
  submit,
  untilAllTerminal,
} from './support/redis-cluster-load.ts'

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
        await untilAllTerminal(db, stack, accepted, 120_000)

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

        // A multi-key command across slots is what a cluster refuses.
        expect(linesWith(stack, 'CROSSSLOT')).toEqual([])
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
})
