// A Redis Cluster connection after a failover: commands in flight together, to keys of different
// slots that one master served, each follow their `MOVED` to the new master. (Batched into one
// pipeline, as auto-pipelining does, their different `MOVED` answers reached the caller and the
// client never read the slot map again: partitions that no enqueue or reconcile reached.)
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { Redis } from 'ioredis'
import { describe, eventually, expect, startRedisCluster, test } from '@baton/testing'
import { createRedisConnection } from '../src/connection.ts'

const run = promisify(execFile)

describe('a Redis Cluster connection across a failover', () => {
  test(
    'two keys of two slots of one master, read together after its replica took over, answer their values',
    { timeout: 180_000 },
    async ({ track }) => {
      const cluster = track(await startRedisCluster())
      // Auto-pipelining asked for, as the API and the worker ask for it.
      const connection = createRedisConnection('', 'test', {
        autoPipelining: true,
        cluster: {
          nodes: cluster.nodeList.split(',').map((hostPort) => {
            const [host, port] = hostPort.split(':')
            return { host: host!, port: Number(port) }
          }),
          retry: 'failover',
        },
      })
      try {
        // Two hash tags whose slots differ and belong to the same master.
        const [master] = await cluster.masters()
        const owns = (slot: number) =>
          master!.slots.some(([from, to]) => slot >= from && slot <= to)
        const keys: string[] = []
        for (let i = 0; keys.length < 2; i += 1) {
          const key = `{p${i}}:k`
          const slot = await cluster.keySlot(key)
          if (
            owns(slot) &&
            !(await Promise.all(keys.map((k) => cluster.keySlot(k)))).includes(slot)
          )
            keys.push(key)
        }
        await Promise.all(keys.map((key) => connection.set(key, key)))
        expect(await Promise.all(keys.map((key) => connection.get(key)))).toEqual(keys)

        // A manual failover: the replica takes the master's slots over at once (TAKEOVER), once it
        // holds both writes; the master follows it.
        const replica = await cluster.replicaOf(master!.server)
        expect(replica).toBeDefined()
        const direct = new Redis(replica!.url)
        try {
          await direct.readonly()
          await eventually(
            async () =>
              (await Promise.all(keys.map((key) => direct.get(key)))).every((v, i) => v === keys[i])
                ? true
                : undefined,
            { what: 'the replica to hold both writes' },
          )
        } finally {
          direct.disconnect()
        }
        await run('redis-cli', ['-p', String(replica!.port), 'cluster', 'failover', 'takeover'])
        for (;;) {
          const masters = await cluster.masters()
          if (masters.some((m) => m.server.port === replica!.port)) break
          await new Promise((r) => setTimeout(r, 100))
        }
        await cluster.waitHealthy(60_000)

        // Sent in one tick, to the node the connection still thinks serves both slots.
        expect(await Promise.all(keys.map((key) => connection.get(key)))).toEqual(keys)
      } finally {
        connection.disconnect()
        await cluster.close()
      }
    },
  )
})
