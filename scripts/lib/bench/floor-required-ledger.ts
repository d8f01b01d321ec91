// The least ledger that records what Baton's design requires: the queue floor given a database
// and `FLOOR_LEDGER=required` makes the bare ledger's three statements (floor-bare-ledger.ts),
// each also writing the rows and index entries the seeds and DESIGN.md ask of it, in their
// plainest form, and nothing more:
// - the accept inserts an agent row per new delegation (DESIGN.md, Accept);
// - at most one non-terminal attempt per agent, kept by a partial unique index (DESIGN.md, and the
//   seed's "the store rejects a second active attempt for the same session-scoped agent_id");
// - every transition appended to an audit row in the statement that makes it (the seed persists
//   "execution transitions"), found again by attempt;
// - the claim hands the child its prompt from the ledger, as Baton's does (its jobs carry no input);
// - the terminal commit stores a fingerprint of the result (the seed's terminal-commit
//   fingerprint; here a SHA-256 the database computes);
// - the reconciler finds queued attempts and expired leases without reading the whole history (one
//   partial index each), and a caller's idempotency key is unique in its session (a partial index:
//   an unkeyed delegation adds no entry).
// No sessions table, foreign keys, namespaces, steering counters, digests of requests, artifacts or
// continuations. Its figures beside the bare ledger's are what the required records cost; beside
// Baton's core (the same processes with Baton's own statements), whether Baton's statements write
// more than they must.
import { BARE_LEDGER, LEASE, type PlainLedger } from './floor-bare-ledger.ts'

const SCHEMA_SQL = `
  create table agents (
    id uuid primary key,
    session_id text not null,
    name text not null
  );
  create table attempts (
    id uuid primary key,
    agent_id uuid not null,
    session_id text not null,
    name text not null,
    prompt jsonb not null,
    idempotency_key text,
    status text not null default 'accepted',
    owner_id text,
    owner_generation integer not null default 0,
    lease_expires_at timestamptz,
    stop_reason text,
    output text,
    fingerprint text,
    created_at timestamptz not null default now(),
    claimed_at timestamptz,
    finished_at timestamptz
  );
  create unique index attempts_one_active_per_agent on attempts (agent_id) where status <> 'terminal';
  create index attempts_accepted_idx on attempts (created_at) where status = 'accepted';
  create index attempts_running_lease_idx on attempts (lease_expires_at) where status = 'running';
  create unique index attempts_idempotency_idx on attempts (session_id, idempotency_key)
    where idempotency_key is not null;
  create table attempt_transitions (
    attempt_id uuid not null,
    to_status text not null,
    owner_generation integer not null,
    at timestamptz not null default now()
  );
  create index attempt_transitions_attempt_idx on attempt_transitions (attempt_id)`

/** The required ledger: the bare ledger's statements (same parameters) with the required records. */
export const REQUIRED_LEDGER: PlainLedger = {
  schema: SCHEMA_SQL,
  accept: `
    with input as (
      select i.*, gen_random_uuid() as agent_id
      from unnest($1::uuid[], $2::text[], $3::text[], $4::jsonb[]) as i(id, session_id, name, prompt)
    ), agent as (
      insert into agents (id, session_id, name) select agent_id, session_id, name from input
    ), accepted as (
      insert into attempts (id, agent_id, session_id, name, prompt)
      select id, agent_id, session_id, name, prompt from input
      returning id
    )
    insert into attempt_transitions (attempt_id, to_status, owner_generation)
    select id, 'accepted', 0 from accepted`,
  claim: `
    with claimed as (
      update attempts set status = 'running', owner_id = $1,
             owner_generation = owner_generation + 1,
             lease_expires_at = now() + interval '${LEASE}', claimed_at = now()
      where id = any($2::uuid[]) and status = 'accepted'
      returning id, owner_generation, prompt
    ), audit as (
      insert into attempt_transitions (attempt_id, to_status, owner_generation)
      select id, 'running', owner_generation from claimed
    )
    select id, owner_generation, prompt from claimed`,
  commit: `
    with ended as (
      update attempts a set status = 'terminal', stop_reason = c.stop_reason, output = c.output,
             fingerprint = encode(sha256(convert_to(
               concat_ws(E'\\n', a.id, c.generation, c.stop_reason, c.output), 'UTF8')), 'hex'),
             finished_at = now()
      from unnest($2::uuid[], $3::int[], $4::text[], $5::text[])
        as c(id, generation, stop_reason, output)
      where a.id = c.id and a.status = 'running' and a.owner_id = $1
        and a.owner_generation = c.generation and a.lease_expires_at > now()
      returning a.id, a.stop_reason, a.output, a.owner_generation
    ), audit as (
      insert into attempt_transitions (attempt_id, to_status, owner_generation)
      select id, 'terminal', owner_generation from ended
    )
    select id, stop_reason, output from ended`,
}

/** The ledgers the floor's processes can write with plain statements, by `FLOOR_LEDGER`. */
export const PLAIN_LEDGERS = { bare: BARE_LEDGER, required: REQUIRED_LEDGER } as const
