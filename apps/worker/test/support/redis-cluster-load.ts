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
  try {
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
  } catch (error) {
    // Name the attempts that did not end, with their transitions, and what the processes said
    // of them: the failure has to be readable from the CI log alone.
    const open = await sql<Record<string, unknown>>`
      select a.id, a.status, a.owner_id, a.owner_generation, a.lease_expires_at, a.created_at,
             (select json_agg(json_build_object('event', t.event, 'to', t.to_status, 'at', t.at)
                              order by t.at)
              from attempt_transitions t where t.attempt_id = a.id) as transitions
      from attempts a
      where a.id = any(${[...ids]}::uuid[]) and a.status <> 'terminal'
      limit 5
    `.execute(db)
    const said = open.rows.flatMap((row) => linesWith(stack, String(row.id)).slice(-5))
    throw new Error(
      `${(error as Error).message}\n${JSON.stringify(open.rows, null, 1)}\n${said.join('\n')}`,
      { cause: error },
    )
  }
}

/** The lines the stack's processes printed that contain `words`. */
export const linesWith = (stack: BatonStack, words: string): string[] =>
  [stack.api, ...stack.workers]
    .flatMap((p) => p.output().split('\n'))
    .filter((line) => line.includes(words))
