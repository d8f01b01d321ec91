import { execFile } from 'node:child_process'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { Redis } from 'ioredis'
import { startRedisServer, type RedisServer } from './redis-server.ts'

const run = promisify(execFile)

/** A private Redis Cluster of one test or script: its nodes, masters and replicas. */
export interface RedisClusterServers {
  /** Every node, masters first as created (their roles change after a failover). */
  readonly nodes: readonly RedisServer[]
  /** `host:port,...` of every node: the value of `REDIS_CLUSTER_NODES`. */
  readonly nodeList: string
  /** The nodes that are masters now, with the slot ranges they serve (`CLUSTER SHARDS`). */
  masters(): Promise<ClusterMaster[]>
  /** The keys a node holds that match `pattern` (SCAN over that node alone). */
  keysOn(server: RedisServer, pattern: string): Promise<string[]>
  /** The slot of a key (`CLUSTER KEYSLOT`). */
  keySlot(key: string): Promise<number>
  /** The master holding the most keys that match `pattern` now (ties: the first). */
  busiestMaster(pattern: string): Promise<ClusterMaster>
  /** A live replica of `master` (`CLUSTER NODES`), if it has one. */
  replicaOf(master: RedisServer): Promise<RedisServer | undefined>
  /**
   * Starts a node that was killed again on its port with its cluster config: it finds that its
   * replica took its slots over and follows it. Resolves once it replicates and the cluster is
   * healthy, so the next master to die has a replica again.
   */
  rejoin(server: RedisServer, timeoutMs?: number): Promise<void>
  /**
   * Resolves once every live node reports `cluster_state:ok` and live masters serve every slot
   * (after a master died: once its replica took over).
   */
  waitHealthy(timeoutMs?: number): Promise<void>
  close(): Promise<void>
  isClosed(): boolean
}

export interface ClusterMaster {
  readonly server: RedisServer
  /** Inclusive slot ranges. */
  readonly slots: readonly (readonly [number, number])[]
}

/**
 * Starts `masters` masters and one replica each as private `redis-server` processes (see
 * `startRedisServer`) with cluster mode on, joins them with `redis-cli --cluster create`, and
 * resolves once the cluster is healthy and every master's replica has synced. A master that stops answering for `nodeTimeoutMs` is
 * replaced by its replica. Their cluster config files live in a temporary directory removed by
 * `close`.
 */
export async function startRedisCluster(
  options: { readonly masters?: number; readonly nodeTimeoutMs?: number } = {},
): Promise<RedisClusterServers> {
  const masters = options.masters ?? 3
  const nodeTimeoutMs = options.nodeTimeoutMs ?? 2_000
  const dir = await mkdtemp(join(tmpdir(), 'baton-redis-cluster-'))
  const nodes: RedisServer[] = []
  let closed = false
  const close = async (): Promise<void> => {
    if (closed) return
    closed = true
    await Promise.all(nodes.map((n) => n.close()))
    await rm(dir, { recursive: true, force: true })
  }
  try {
    for (let i = 0; i < masters * 2; i++) {
      nodes.push(
        await startRedisServer({
          args: (port) => [
            '--cluster-enabled',
            'yes',
            '--cluster-config-file',
            join(dir, `nodes-${port}.conf`),
            '--cluster-node-timeout',
            String(nodeTimeoutMs),
            '--dir',
            dir,
          ],
        }),
      )
    }
    const addresses = nodes.map((n) => `127.0.0.1:${n.port}`)
    await run('redis-cli', [
      '--cluster',
      'create',
      ...addresses,
      '--cluster-replicas',
      '1',
      '--cluster-yes',
    ])
  } catch (error) {
    await close()
    throw error
  }

  async function clusterCommand(node: RedisServer, ...args: string[]): Promise<string> {
    const { stdout } = await run('redis-cli', ['-p', String(node.port), ...args], {
      timeout: 2_000,
    })
    return stdout
  }

  async function currentMasters(): Promise<ClusterMaster[]> {
    // Any live node knows the map: ask them in turn.
    for (const node of nodes) {
      let slotsReply: string
      try {
        slotsReply = await clusterCommand(node, '--json', 'cluster', 'slots')
      } catch {
        continue
      }
      const ranges = JSON.parse(slotsReply) as [number, number, [string, number, string]][]
      const byPort = new Map<number, [number, number][]>()
      for (const [from, to, [, port]] of ranges) {
        const list = byPort.get(port) ?? []
        list.push([from, to])
        byPort.set(port, list)
      }
      return [...byPort].flatMap(([port, slots]) => {
        const server = nodes.find((n) => n.port === port)
        return server === undefined ? [] : [{ server, slots }]
      })
    }
    throw new Error('no cluster node answers')
  }

  async function waitHealthy(timeoutMs = 30_000): Promise<void> {
    const deadline = Date.now() + timeoutMs
    for (;;) {
      try {
        const live: RedisServer[] = []
        for (const node of nodes) if (await answers(node)) live.push(node)
        const states = await Promise.all(live.map((n) => clusterCommand(n, 'cluster', 'info')))
        const serving = await currentMasters()
        const covered = serving.flatMap((m) => m.slots)
        const slots = covered.reduce((sum, [from, to]) => sum + to - from + 1, 0)
        // A master that died still owns its slots until its replica takes over.
        const alive = serving.every((m) => live.includes(m.server))
        if (alive && states.every((s) => s.includes('cluster_state:ok')) && slots === 16_384) return
      } catch {
        // Not there yet.
      }
      if (Date.now() > deadline) throw new Error('the Redis Cluster did not become healthy')
      await new Promise((r) => setTimeout(r, 100))
    }
  }

  async function answers(node: RedisServer): Promise<boolean> {
    try {
      return (await clusterCommand(node, 'ping')).includes('PONG')
    } catch {
      return false
    }
  }

  try {
    // Generous: on a busy machine the nodes take a while to agree.
    const deadline = Date.now() + 120_000
    await waitHealthy(120_000)
    // And every master has a replica that has synced: one the others do not know of yet, or one
    // that never synced, cannot take over when its master dies.
    for (;;) {
      const synced = await Promise.all(
        (await currentMasters()).map(async (master) => {
          const replica = await replicaOf(master.server).catch(() => undefined)
          if (replica === undefined) return false
          const replication = await clusterCommand(replica, 'info', 'replication').catch(() => '')
          return replication.includes('master_link_status:up')
        }),
      )
      if (synced.length === masters && synced.every(Boolean)) break
      if (Date.now() > deadline) throw new Error('the Redis Cluster replicas did not sync')
      await new Promise((r) => setTimeout(r, 100))
    }
  } catch (error) {
    await close()
    throw error
  }
  async function keysOn(server: RedisServer, pattern: string): Promise<string[]> {
    const redis = new Redis(server.url, { lazyConnect: true, maxRetriesPerRequest: 1 })
    try {
      const keys: string[] = []
      let cursor = '0'
      do {
        const [next, batch] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 1000)
        keys.push(...batch)
        cursor = next
      } while (cursor !== '0')
      return keys
    } finally {
      redis.disconnect()
    }
  }

  async function keySlot(key: string): Promise<number> {
    for (const node of nodes) {
      try {
        return Number((await clusterCommand(node, 'cluster', 'keyslot', key)).trim())
      } catch {
        // Ask the next node.
      }
    }
    throw new Error('no cluster node answers')
  }

  async function busiestMaster(pattern: string): Promise<ClusterMaster> {
    let busiest: ClusterMaster | undefined
    let most = -1
    for (const master of await currentMasters()) {
      const keys = (await keysOn(master.server, pattern)).length
      if (keys > most) [busiest, most] = [master, keys]
    }
    if (busiest === undefined) throw new Error('the cluster has no master')
    return busiest
  }

  async function replicaOf(master: RedisServer): Promise<RedisServer | undefined> {
    for (const node of nodes) {
      let reply: string
      try {
        reply = await clusterCommand(node, 'cluster', 'nodes')
      } catch {
        continue
      }
      // `<id> <ip:port@cport> <flags> <master id or -> ...`, one node a line.
      const lines = reply
        .trim()
        .split('\n')
        .map((line) => line.split(' '))
      const portOf = (address: string | undefined): number =>
        Number(/:(\d+)@/.exec(address ?? '')?.[1] ?? -1)
      const masterId = lines.find((l) => portOf(l[1]) === master.port)?.[0]
      if (masterId === undefined) return undefined
      const replica = lines.find(
        (l) => l[3] === masterId && l[2]?.includes('slave') && !l[2].includes('fail'),
      )
      return nodes.find((n) => n.port === portOf(replica?.[1]))
    }
    throw new Error('no cluster node answers')
  }

  async function rejoin(server: RedisServer, timeoutMs = 60_000): Promise<void> {
    await server.restart()
    const deadline = Date.now() + timeoutMs
    for (;;) {
      try {
        const replication = await clusterCommand(server, 'info', 'replication')
        if (replication.includes('role:slave') && replication.includes('master_link_status:up'))
          break
      } catch {
        // Not there yet.
      }
      if (Date.now() > deadline) throw new Error(`redis node ${server.port} did not rejoin`)
      await new Promise((r) => setTimeout(r, 100))
    }
    await waitHealthy(Math.max(1_000, deadline - Date.now()))
  }

  return {
    nodes,
    nodeList: nodes.map((n) => `127.0.0.1:${n.port}`).join(','),
    masters: currentMasters,
    keysOn,
    keySlot,
    busiestMaster,
    replicaOf,
    rejoin,
    waitHealthy,
    close,
    isClosed: () => closed,
  }
}
