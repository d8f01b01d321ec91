// BullMQ workers blocked for jobs on a Redis Cluster master that is SIGKILLed: once its replica
// has taken over, every partition takes its next job, on the partitions whose workers blocked on
// the dead master too. (Their wait outlives its watchdog while the cluster is down; BullMQ then
// reconnects the blocking connection and awaits it. A connection whose ready check found the
// cluster down never settled that wait, and the partition took no job again.)
import { Queue, Worker } from 'bullmq'
import { Redis } from 'ioredis'
import { describe, eventually, expect, startRedisCluster, test } from '@baton/testing'
import { createRedisConnection } from '../src/connection.ts'
import { partitionPrefixes } from '../src/partitions.ts'

const PARTITIONS = 8
/** How long a worker blocks for a job (s); BullMQ's watchdog resets the wait a second later. */
const DRAIN_DELAY_S = 1
const LEASE_MS = 5_000

describe('partition workers across a master kill', () => {
  test(
    'each partition takes its next job after the master its worker blocked on died',
    { timeout: 240_000 },
    async ({ track }) => {
      const cluster = track(await startRedisCluster())
      const nodes = cluster.nodeList.split(',').map((hostPort) => {
        const [host, port] = hostPort.split(':')
        return { host: host!, port: Number(port) }
      })
      const connection = createRedisConnection('', 'test', {
        autoPipelining: true,
        cluster: { nodes, retry: 'failover' },
      })
      const prefixes = partitionPrefixes({ prefix: 'bq', partitions: PARTITIONS })
      const taken = new Map<string, string[]>()
      const queues = prefixes.map((prefix) => new Queue('jobs', { connection, prefix }))
      const workers = prefixes.map(
        (prefix) =>
          new Worker(
            'jobs',
            async (job) => {
              taken.set(prefix, [...(taken.get(prefix) ?? []), job.name])
            },
            {
              connection,
              prefix,
              concurrency: 2,
              drainDelay: DRAIN_DELAY_S,
              // As the worker sets them from its lease TTL: a job taken by a call whose caller had
              // given up (a command that timed out while the cluster was down still runs once it
              // is back) is returned to its queue by the stalled-job check.
              lockDuration: LEASE_MS,
              stalledInterval: LEASE_MS,
            },
          ),
      )
      // Commands that time out while the cluster is down fail the worker's calls; expected here.
      for (const worker of workers) worker.on('error', () => undefined)
      const probes: Redis[] = []
      try {
        await Promise.all(workers.map((w) => w.waitUntilReady()))
        // Every partition takes a job: each worker runs and blocks for the next.
        await Promise.all(queues.map((q) => q.add('before', {})))
        await eventually(
          async () => (prefixes.every((p) => taken.get(p)?.includes('before')) ? true : undefined),
          { what: 'every partition to take its first job', timeoutMs: 60_000 },
        )

        // The master serving the most partitions, and its replica.
        const slots = await Promise.all(prefixes.map((p) => cluster.keySlot(`${p}:jobs:marker`)))
        const masters = await cluster.masters()
        const served = (m: (typeof masters)[number]) =>
          slots.filter((s) => m.slots.some(([from, to]) => s >= from && s <= to)).length
        const victim = masters.reduce((a, b) => (served(b) > served(a) ? b : a))
        expect(served(victim)).toBeGreaterThan(0)
        const replica = await cluster.replicaOf(victim.server)
        if (replica === undefined) throw new Error('the master has no replica')

        // The master dies while its replica is stopped, so the cluster stays down (its slots
        // served by no one) until the replica resumes: long enough for the waits of the workers
        // that blocked on the dead master to outlive their watchdog a few times, each reset
        // reconnecting to a cluster that is down.
        const survivor = masters.find((m) => m !== victim)
        if (survivor === undefined) throw new Error('the cluster has one master')
        const survivorProbe = new Redis(survivor.server.url)
        probes.push(survivorProbe)
        replica.pause()
        try {
          await victim.server.crash()
          await eventually(
            async () =>
              (await survivorProbe.cluster('INFO')).includes('cluster_state:fail')
                ? true
                : undefined,
            { what: 'the cluster to see the master fail', timeoutMs: 60_000 },
          )
          await new Promise((r) => setTimeout(r, 3 * (DRAIN_DELAY_S + 1) * 1000))
        } finally {
          replica.resume()
        }
        await cluster.waitHealthy(60_000)

        await Promise.all(queues.map((q) => q.add('after', {})))
        const stalled = () => prefixes.filter((p) => !taken.get(p)?.includes('after'))
        await eventually(async () => (stalled().length === 0 ? true : undefined), {
          what: 'every partition to take its job after the failover',
          timeoutMs: 90_000,
        }).catch((error: unknown) => {
          throw new Error(`${String(error)}; partitions that took no job: ${stalled().join(', ')}`)
        })
      } finally {
        for (const probe of probes) probe.disconnect()
        await Promise.all(workers.map((w) => w.close(true)))
        await Promise.all(queues.map((q) => q.close()))
        connection.disconnect()
        await cluster.close()
      }
    },
  )
})
