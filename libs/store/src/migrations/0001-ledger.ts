import { sql, type Kysely } from 'kysely'

/**
 * The ledger: namespaces, sessions, agents, attempts and the append-only transition audit.
 * Append-only: never edit a migration that has shipped; add the next number instead.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    create table namespaces (
      id text primary key,
      created_at timestamptz not null default now()
    );
    insert into namespaces (id) values ('default');

    create table sessions (
      id text primary key,
      namespace_id text not null references namespaces (id),
      created_at timestamptz not null default now()
    );

    create table agents (
      id uuid primary key,
      session_id text not null references sessions (id),
      name text not null,
      created_at timestamptz not null default now()
    );
    create index agents_session_idx on agents (session_id);

    create table attempts (
      id uuid primary key,
      agent_id uuid not null references agents (id),
      session_id text not null,
      name text not null,
      prompt jsonb not null,
      metadata jsonb not null default '{}',
      status text not null check (status in ('accepted', 'running', 'terminal')),
      owner_id text,
      owner_generation integer not null default 0,
      lease_expires_at timestamptz,
      cancel_requested_at timestamptz,
      cancel_reason text,
      stop_reason text,
      output_preview text,
      output_truncated boolean,
      output_bytes integer,
      output_digest text,
      failure_category text,
      fingerprint text,
      created_at timestamptz not null default now(),
      started_at timestamptz,
      terminal_at timestamptz,
      constraint attempts_terminal_complete check (
        status <> 'terminal'
        or (stop_reason is not null and fingerprint is not null and terminal_at is not null
            and output_digest is not null and output_bytes is not null)
      )
    );
    -- One non-terminal attempt per agent: the ledger itself refuses a second active attempt.
    create unique index attempts_one_active_per_agent on attempts (agent_id) where status <> 'terminal';
    create index attempts_accepted_idx on attempts (created_at) where status = 'accepted';
    create index attempts_running_lease_idx on attempts (lease_expires_at) where status = 'running';

    -- Append-only audit of every state change, with the owner generation that made it.
    create table attempt_transitions (
      id bigint generated always as identity primary key,
      attempt_id uuid not null references attempts (id),
      from_status text,
      to_status text not null,
      event text not null,
      owner_id text,
      owner_generation integer not null,
      at timestamptz not null default now()
    );
    create index attempt_transitions_attempt_idx on attempt_transitions (attempt_id);
  `.execute(db)
}
