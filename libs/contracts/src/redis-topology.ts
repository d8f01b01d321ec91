import { z } from 'zod'

/** Most queue partitions a deployment may have (`QUEUE_PARTITIONS`). */
const MAX_PARTITIONS = 1024

const HOST_PORT_LIST = /^\s*[^\s,:]+:\d{1,5}\s*(,\s*[^\s,:]+:\d{1,5}\s*)*$/

/**
 * Where both apps find Redis and how they lay their keys out in it; the API and every worker of
 * one deployment must be given the same values.
 */
export const redisTopologyEnvShape = {
  /**
   * How many partitions the attempt queue and the bell streams are split into: each partition's
   * keys share one hash tag, so a Redis Cluster spreads the partitions over its masters. Fixed per
   * deployment (a session's attempts are found in the partition its ids hash to).
   */
  QUEUE_PARTITIONS: z.coerce.number().int().min(1).max(MAX_PARTITIONS).default(1),
  /** `host:port,...` of some Redis Cluster nodes: connect to that cluster instead of `REDIS_URL`. */
  REDIS_CLUSTER_NODES: z
    .string()
    .regex(HOST_PORT_LIST, 'expected host:port[,host:port...]')
    .optional(),
  /**
   * `failover` (default): cluster connections wait out a master's failover. `client`: the client
   * library's own retry settings (to compare; they give up sooner).
   */
  REDIS_CLUSTER_RETRY: z.enum(['failover', 'client']).default('failover'),
}

export interface RedisTopology {
  readonly queuePartitions: number
  /** The cluster to connect to, when `REDIS_CLUSTER_NODES` is set. */
  readonly redisCluster:
    | {
        readonly nodes: readonly { readonly host: string; readonly port: number }[]
        readonly retry: 'failover' | 'client'
      }
    | undefined
}

export function redisTopology(
  env: z.infer<z.ZodObject<typeof redisTopologyEnvShape>>,
): RedisTopology {
  const list = env.REDIS_CLUSTER_NODES
  return {
    queuePartitions: env.QUEUE_PARTITIONS,
    redisCluster:
      list === undefined
        ? undefined
        : {
            nodes: list.split(',').map((item) => {
              const [host, port] = item.trim().split(':') as [string, string]
              return { host, port: Number(port) }
            }),
            retry: env.REDIS_CLUSTER_RETRY,
          },
  }
}
