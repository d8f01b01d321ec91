// What the Redis Cluster suites share: the environment that puts Baton on the cluster, a submit
// that must be accepted, the wait for every attempt to end, and what the processes printed.
import { sql } from 'kysely'
import type { Db } from '@baton/store'
import {
  delegationsPath,
  eventually,
  expect,
  type BatonStack,
  type RedisClusterServers,
} from '@baton/testing'

export const PARTITIONS = 8

/** The environment that puts both apps on the cluster, partitioned. */
export const clusterEnv = (cluster: RedisClusterServers): Record<string, string> => ({
  QUEUE_PARTITIONS: String(PARTITIONS),
  REDIS_CLUSTER_NODES: cluster.nodeList,
})

/** Submits `prompt` to subagent `name` in `session`; answers the attempt id. */
export async function submit(
  stack: BatonStack,
  name: string,
  session: string,
  prompt: string,
): Promise<string> {
  const answer = await stack.post(delegationsPath(session), { name, prompt })
  expect(answer.status, JSON.stringify(answer.body)).toBe(202)
  return (answer.body as { attemptId: string }).attemptId
}

/**
 * Waits for every attempt of `ids` to end. A process that printed a CROSSSLOT refusal fails the
 * wait at once, naming it: the attempts of a partition whose keys span slots never end.
 */
export async function untilAllTerminal(
  db: Db,
  stack: BatonStack,
  ids: readonly string[],
  timeoutMs: number,
): Promise<void> {
  await eventually(
    async () => {
      expect(linesWith(stack, 'CROSSSLOT').slice(0, 1)).toEqual([])
      const r = await sql<{ n: number }>`
        select count(*)::int as n from attempts
        where id = any(${[...ids]}::uuid[]) and status <> 'terminal'
      `.execute(db)
      return r.rows[0]?.n === 0 ? true : undefined
    },
    { timeoutMs, intervalMs: 100, what: 'every attempt to end' },
  )
}

/** The lines the stack's processes printed that contain `words`. */
export const linesWith = (stack: BatonStack, words: string): string[] =>
  [stack.api, ...stack.workers]
    .flatMap((p) => p.output().split('\n'))
    .filter((line) => line.includes(words))
