// What the bench and the hand-rolled service's processes (naive-service.ts) agree on: its one
// table and the lines that say a process is ready.

export const NAIVE_READY_MESSAGES = {
  api: 'naive api listening',
  worker: 'naive worker started',
} as const

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
