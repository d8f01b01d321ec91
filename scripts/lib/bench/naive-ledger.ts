// What the hand-rolled service's API and worker processes share: its one table, its queue and the
// lines that say a process is ready. The service is the bench's yardstick — what a team builds with
// Fastify, BullMQ and Postgres when it wants "delegate and wait" and nothing more: no leases, no
// fences, no audit, no batching, no cancellation.
import { queueServiceSettings, requiredSetting } from './yardstick.ts'

export const NAIVE_QUEUE = 'delegations'
export const NAIVE_API_READY_MESSAGE = 'naive api listening'
export const NAIVE_WORKER_READY_MESSAGE = 'naive worker started'

export const NAIVE_SCHEMA_SQL = `
  create table delegations (
    id uuid primary key,
    session_id text not null,
    name text not null,
    prompt jsonb not null,
    status text not null default 'accepted',
    output text,
    created_at timestamptz not null default now(),
    finished_at timestamptz
  )`

/** The job: the row's id and the prompt, so the worker needs no read before it runs. */
export interface NaiveJob {
  readonly id: string
  readonly prompt: unknown
}

/** The settings of both processes, from their environment. */
export function naiveSettings(env: NodeJS.ProcessEnv) {
  return { databaseUrl: requiredSetting(env, 'DATABASE_URL'), ...queueServiceSettings(env) }
}
