import type { RedisCluster } from './connection.ts'

/**
 * Where Baton's keys live in Redis: the key prefix (`QUEUE_PREFIX`), how many partitions the
 * attempt queue and the bell streams are split into (`QUEUE_PARTITIONS`), and the Redis Cluster,
 * when there is one (`REDIS_CLUSTER_NODES`).
 *
 * The partition count is fixed per deployment: a session's jobs are found in the partition its
 * ids hash to, so changing it strands the jobs already queued (the reconciler re-enqueues them
 * into their new partition once they are older than `REQUEUE_AFTER_MS`, so nothing is lost, but
 * they wait that long).
 */
export interface QueueTopology {
  readonly prefix: string
  readonly partitions: number
  readonly cluster?: RedisCluster | undefined
}

/** The ids that decide an attempt's queue partition: its session's. */
export interface SessionKey {
  readonly namespaceId: string
  readonly sessionId: string
}

/**
 * The partition of a key: 32-bit FNV-1a of its UTF-8 bytes, modulo `partitions`. Stable across
 * processes, versions and platforms (every API and worker must agree, and a job already queued
 * must be found where it was put), so it never changes.
 */
export function partitionOf(key: string, partitions: number): number {
  if (partitions <= 1) return 0
  let hash = 0x811c9dc5
  for (const byte of new TextEncoder().encode(key)) {
    hash ^= byte
    hash = Math.imul(hash, 0x01000193) >>> 0
  }
  return hash % partitions
}

/**
 * The queue partition of a session's attempts: every attempt of one session goes to one
 * partition, so a session's work lives on one Redis Cluster master.
 */
export function sessionPartition(session: SessionKey, partitions: number): number {
  return partitionOf(`${session.namespaceId}\u0000${session.sessionId}`, partitions)
}

/**
 * The stream partition of a bell about one attempt. Every reader reads every partition, so this
 * only spreads the bells over the partitions (and over a cluster's masters).
 */
export function attemptPartition(attemptId: string, partitions: number): number {
  return partitionOf(attemptId, partitions)
}

/**
 * The BullMQ prefix of one partition. The keys of a partition share one hash tag (`{...}`), so
 * BullMQ's scripts, which touch several keys of a queue at once, find them in one cluster slot.
 * One partition without a cluster keeps the plain prefix, the key names of a deployment that
 * predates partitions; on a cluster it is tagged too.
 */
export function partitionPrefix(topology: QueueTopology, partition: number): string {
  if (topology.partitions <= 1) {
    return topology.cluster === undefined ? topology.prefix : `{${topology.prefix}}`
  }
  return `{${topology.prefix}:p${partition}}`
}

/** Every partition's prefix, in partition order. */
export function partitionPrefixes(topology: QueueTopology): string[] {
  return Array.from({ length: Math.max(1, topology.partitions) }, (_, i) =>
    partitionPrefix(topology, i),
  )
}

/**
 * How a process's concurrency is split between its partition workers: as evenly as it goes, the
 * first `concurrency % partitions` one more; every partition gets at least one slot, so a process
 * with fewer slots than partitions runs up to one job per partition.
 */
export function splitConcurrency(concurrency: number, partitions: number): number[] {
  const k = Math.max(1, partitions)
  const base = Math.floor(concurrency / k)
  const extra = concurrency % k
  return Array.from({ length: k }, (_, i) => Math.max(1, base + (i < extra ? 1 : 0)))
}
