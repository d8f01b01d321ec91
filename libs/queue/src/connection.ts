import { Cluster, Redis, type ClusterOptions, type RedisOptions } from 'ioredis'

/** How long a Redis call may take: every connection Baton opens is bounded by these. */
export interface RedisTimeouts {
  /** A command unanswered this long fails (`Command timed out`, a transient error). */
  readonly commandTimeoutMs: number
  /** A connection not made this long is given up and tried again. */
  readonly connectTimeoutMs: number
}

/** The bounds of a connection whose owner names none (scripts, tests). */
export const DEFAULT_REDIS_TIMEOUTS: RedisTimeouts = {
  commandTimeoutMs: 5_000,
  connectTimeoutMs: 5_000,
}

/**
 * A Redis Cluster to connect to instead of one Redis (`REDIS_CLUSTER_NODES`): some of its nodes
 * (the client learns the rest), and which retry settings its connections use.
 */
export interface RedisCluster {
  readonly nodes: readonly { readonly host: string; readonly port: number }[]
  /**
   * `failover` (the default) waits out a master's failover: a command sent while its slots have
   * no master is retried until the replica took over, instead of failing. `client` keeps the
   * client library's own settings, which give up sooner; it exists to compare the two.
   */
  readonly retry: 'failover' | 'client'
}

/** One Redis or a Redis Cluster: what every part of Baton talks to Redis through. */
export type RedisConnection = Redis | Cluster

/**
 * The retries of a cluster connection that outlast a failover. A failover takes a few seconds
 * (the replicas notice the master is gone after `cluster-node-timeout`, then elect one): while it
 * lasts, commands to its slots answer `CLUSTERDOWN` or are redirected (`MOVED`) several times, and
 * each retry waits a little. `maxRedirections` bounds redirections of one command, so it is raised
 * to cover the whole failover at that pace.
 */
const FAILOVER_RETRY: Partial<ClusterOptions> = {
  maxRedirections: 64,
  retryDelayOnFailover: 300,
  retryDelayOnClusterDown: 300,
  retryDelayOnTryAgain: 300,
  retryDelayOnMoved: 50,
  // The slot map is read again after a failover; a node that stopped answering must not hold
  // that read back for long.
  slotsRefreshTimeout: 2_000,
}

/**
 * A Redis connection as BullMQ needs it: blocking commands must not be retried per request, so
 * `maxRetriesPerRequest` is null; the client reconnects on its own after a Redis restart. With
 * `options.cluster` it is a connection to that Redis Cluster (and `url` is not used); every
 * connection Baton opens, to one Redis or to a cluster, is made here.
 *
 * Every command is bounded by `timeouts.commandTimeoutMs` and every connect by
 * `connectTimeoutMs`, except on the duplicates BullMQ makes of this connection: a worker waits for
 * jobs with a blocking command on one, which answers only when a job arrives or its own timeout
 * (the worker's `drainDelay`) passes, and BullMQ bounds that wait itself (a watchdog of the wait
 * plus a second that resets the connection). A command timeout there would fail every idle wait
 * longer than it.
 */
export function createRedisConnection(
  url: string,
  connectionName = 'baton',
  options: {
    autoPipelining?: boolean
    lazyConnect?: boolean
    timeouts?: RedisTimeouts
    cluster?: RedisCluster | undefined
  } = {},
): RedisConnection {
  const timeouts = options.timeouts ?? DEFAULT_REDIS_TIMEOUTS
  const perNode: RedisOptions = {
    maxRetriesPerRequest: null,
    connectionName,
    commandTimeout: timeouts.commandTimeoutMs,
    connectTimeout: timeouts.connectTimeoutMs,
  }
  // Connects at the first command instead of at once (for a connection that may go unused).
  const lazyConnect = options.lazyConnect ?? false
  // Commands issued in the same tick leave in one write. A duplicate BullMQ makes for its
  // blocking wait for jobs inherits this, harmlessly: nothing else runs on that connection.
  // Never on a cluster: there the client batches the commands of every slot one node serves
  // into one pipeline, and after a failover such a batch answers `MOVED` with a different slot
  // per partition; the client retries a pipeline only when all its errors are the same, so the
  // `MOVED` reaches the caller and the slot map is never read again (no enqueue, no reconcile,
  // ever, for those partitions). Alone, each command follows its `MOVED`.
  const enableAutoPipelining = options.cluster === undefined && (options.autoPipelining ?? false)
  // `duplicate(override)` merges the override into this connection's options; an absent timeout
  // is none.
  const noCommandTimeout = { commandTimeout: undefined } as unknown as Partial<RedisOptions>
  if (options.cluster !== undefined) {
    const cluster = new Cluster(
      options.cluster.nodes.map((node) => ({ ...node })),
      {
        ...(options.cluster.retry === 'failover' ? FAILOVER_RETRY : {}),
        redisOptions: perNode,
        lazyConnect,
        enableAutoPipelining,
      },
    )
    // A duplicate skips the cluster's ready check. BullMQ resets a worker's blocking duplicate
    // whose wait for jobs outlived its watchdog (the master it blocked on died) and awaits the
    // duplicate's `connect()`; during a failover the ready check finds `cluster_state:fail` and
    // reconnects on its own, and the client never settles the promise of the attempt it
    // abandoned (ioredis 5.9): that partition's worker waited forever while the cluster came back.
    // Without the check `connect()` settles when the slot map is read (or the attempt closes);
    // commands sent while the cluster is still down answer `CLUSTERDOWN` and are retried.
    const duplicate = cluster.duplicate.bind(cluster)
    cluster.duplicate = (nodes, override: Partial<ClusterOptions> = {}) =>
      duplicate(nodes, {
        ...override,
        enableReadyCheck: false,
        redisOptions: { ...perNode, ...override.redisOptions, ...noCommandTimeout },
      })
    return cluster
  }
  const connection = new Redis(url, { ...perNode, lazyConnect, enableAutoPipelining })
  const duplicate = connection.duplicate.bind(connection)
  connection.duplicate = (override) => duplicate({ ...override, ...noCommandTimeout })
  return connection
}
