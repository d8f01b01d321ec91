// The least a ledger can write and still keep Baton's three durable steps: the queue floor given
// a database and `FLOOR_LEDGER=bare` makes one bare statement where Baton makes each of its own —
// an insert before the enqueue, a fenced claim (owner, generation, lease) before the child runs
// and a fenced terminal update after it — on one table with its primary key and nothing else: no
// agent rows, no audit of transitions, no partial indexes, no idempotency, no digests, no
// artifacts or continuations. They are batched as Baton's are, and the worker rings Baton's
// settlement bell after each commit, as Baton's core does (see floor-with-ledger.ts).
//
// Any design that keeps what the seeds promise — the delegation on record before it is queued,
// the claim on record before a child with side effects starts, the outcome on record before it
// is answered — makes at least these three writes, so this system's figures bound from below
// what the statements of such a design can cost on Baton's queue path.
//
// The accepts, claims and commits here run any plain ledger's statements (`PlainLedger`): this
// bare one, or the required one (floor-required-ledger.ts).
import { randomUUID } from 'node:crypto'
import pg from 'pg'
import { announceSettled, createSettlementPublisher } from '@baton/queue'
import { createGroupBatcher } from '@baton/store'
import type { TerminalResultInput } from '@baton/store'
import {
  NAMESPACE,
  quietLogger,
  type BellSettings,
  type FloorExecutions,
} from './floor-with-ledger.ts'

const BARE_LEDGER_SCHEMA_SQL = `
  create table attempts (
    id uuid primary key,
    session_id text not null,
    name text not null,
    prompt jsonb not null,
    status text not null default 'accepted',
    owner_id text,
    owner_generation integer not null default 0,
    lease_expires_at timestamptz,
    stop_reason text,
    output text,
    created_at timestamptz not null default now(),
    claimed_at timestamptz,
    finished_at timestamptz
  )`

/** As Baton's batches (see floor-with-ledger.ts). */
const WORKER_BATCH = { maxBatch: 500, maxInFlight: 1 } as const
const ACCEPT_BATCH = { maxBatch: 256, maxInFlight: 1 } as const
/** The lease a claim takes, in Postgres interval syntax. */
export const LEASE = '30 seconds'

/** A floor process's pool, of Baton's default sizes (API 20, worker 10). */
export function plainLedgerPool(
  databaseUrl: string,
  role: 'api' | 'worker',
  ledger: 'bare' | 'required' = 'bare',
): pg.Pool {
  return new pg.Pool({
    connectionString: databaseUrl,
    max: role === 'api' ? 20 : 10,
    application_name: `baton-bench-floor-${ledger}-${role}`,
  })
}

interface Delegation {
  readonly sessionId: string
  readonly name: string
  readonly prompt: unknown
}

/** The row of each id, in the order of `ids`; an id the statement did not return is refused. */
function inOrder<R extends { id: string }>(
  ids: readonly string[],
  rows: readonly R[],
  step: string,
): (R | Error)[] {
  const byId = new Map(rows.map((row) => [row.id, row]))
  return ids.map((id) => byId.get(id) ?? new Error(`attempt ${id}: the ${step} was refused`))
}

function rowOrThrow<R>(answer: R | Error): R {
  if (answer instanceof Error) throw answer
  return answer
}

/**
 * A ledger the floor's processes write with plain statements (this bare one, and the required one
 * of floor-required-ledger.ts): its schema and its three statements, which take the same
 * parameters whatever the ledger.
 * - `accept`: $1 attempt ids, $2 session ids, $3 names, $4 prompts (jsonb); inserts them.
 * - `claim`: $1 owner, $2 attempt ids; returns at least `id, owner_generation` of each `accepted`
 *   attempt it moved to `running` under a fresh lease and the next generation.
 * - `commit`: $1 owner, $2 attempt ids, $3 generations, $4 stop reasons, $5 outputs; returns
 *   `id, stop_reason, output` of each attempt it ended, only under that owner's live fence.
 */
export interface PlainLedger {
  readonly schema: string
  readonly accept: string
  readonly claim: string
  readonly commit: string
}

export const BARE_LEDGER: PlainLedger = {
  schema: BARE_LEDGER_SCHEMA_SQL,
  accept: `insert into attempts (id, session_id, name, prompt)
           select * from unnest($1::uuid[], $2::text[], $3::text[], $4::jsonb[])`,
  claim: `update attempts set status = 'running', owner_id = $1,
                 owner_generation = owner_generation + 1,
                 lease_expires_at = now() + interval '${LEASE}', claimed_at = now()
          where id = any($2::uuid[]) and status = 'accepted'
          returning id, owner_generation`,
  commit: `update attempts a set status = 'terminal', stop_reason = c.stop_reason,
                  output = c.output, finished_at = now()
           from unnest($2::uuid[], $3::int[], $4::text[], $5::text[])
             as c(id, generation, stop_reason, output)
           where a.id = c.id and a.status = 'running' and a.owner_id = $1
             and a.owner_generation = c.generation and a.lease_expires_at > now()
           returning a.id, a.stop_reason, a.output`,
}

/** The API's accept: one row, batched with concurrent ones; resolves with the attempt id. */
export function plainAccepts(
  pool: pg.Pool,
  ledger: PlainLedger = BARE_LEDGER,
): (delegation: Delegation) => Promise<string> {
  const accepts = createGroupBatcher(async (delegations: (Delegation & { id: string })[]) => {
    await pool.query(ledger.accept, [
      delegations.map((d) => d.id),
      delegations.map((d) => d.sessionId),
      delegations.map((d) => d.name),
      delegations.map((d) => JSON.stringify(d.prompt)),
    ])
    return delegations.map((d) => d.id)
  }, ACCEPT_BATCH)
  return (delegation) => accepts.submit({ ...delegation, id: randomUUID() })
}

/** The worker's fenced claim and fenced terminal update, with the bell after each commit. */
export function plainExecutions(
  pool: pg.Pool,
  ownerId: string,
  bell: BellSettings,
  ledger: PlainLedger = BARE_LEDGER,
): FloorExecutions {
  const claims = createGroupBatcher(async (ids: string[]) => {
    const r = await pool.query<{ id: string; owner_generation: number }>(ledger.claim, [
      ownerId,
      ids,
    ])
    return inOrder(ids, r.rows, 'claim')
  }, WORKER_BATCH)
  interface Commit {
    readonly id: string
    readonly generation: number
    readonly result: TerminalResultInput
  }
  const commits = createGroupBatcher(async (items: Commit[]) => {
    const r = await pool.query<{ id: string; stop_reason: string; output: string }>(ledger.commit, [
      ownerId,
      items.map((c) => c.id),
      items.map((c) => c.generation),
      items.map((c) => c.result.stopReason),
      items.map((c) => c.result.output),
    ])
    return inOrder(
      items.map((c) => c.id),
      r.rows,
      'commit',
    )
  }, WORKER_BATCH)
  const publisher = createSettlementPublisher(bell)
  return {
    async claim(attemptId) {
      return rowOrThrow(await claims.submit(attemptId)).owner_generation
    },
    async commit(attemptId, ownerGeneration, result) {
      const row = rowOrThrow(
        await commits.submit({ id: attemptId, generation: ownerGeneration, result }),
      )
      const view = {
        attemptId,
        status: 'terminal',
        stopReason: row.stop_reason,
        output: row.output,
      }
      void announceSettled(publisher, attemptId, quietLogger, { namespaceId: NAMESPACE, view })
    },
    close: () => publisher.close(),
  }
}
