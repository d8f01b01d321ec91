// The bench's side of the queue floor with a plain ledger (the bare one of floor-bare-ledger.ts,
// the required one of floor-required-ledger.ts): its database, and its reads of the `attempts`
// table both have: open rows, the span, each delegation's statement times and an audit of what
// was lost or claimed twice.
import type pg from 'pg'
import { createDatabaseWithSchema } from '../services.ts'
import type { PlainLedger } from './floor-bare-ledger.ts'
import { tableLedgerReader, type LedgerReader } from './http-load.ts'
import type { LedgerTimes } from './wait-steps.ts'

/** Drops and recreates a plain ledger's database with its schema. */
export function preparePlainLedgerDatabase(url: string, ledger: PlainLedger): Promise<void> {
  return createDatabaseWithSchema(url, ledger.schema)
}

export function plainLedgerReader(pool: pg.Pool): LedgerReader {
  return tableLedgerReader(pool, 'attempts', 'terminal')
}

/** When the insert, the claim and the terminal update of each finished attempt began, epoch ms. */
export async function plainLedgerTimes(
  pool: pg.Pool,
  ids: readonly string[],
): Promise<Map<string, LedgerTimes>> {
  if (ids.length === 0) return new Map()
  const r = await pool.query<{ id: string; accepted: number; claimed: number; committed: number }>(
    `select id,
            extract(epoch from created_at)::float8 * 1000 as accepted,
            extract(epoch from claimed_at)::float8 * 1000 as claimed,
            extract(epoch from finished_at)::float8 * 1000 as committed
     from attempts where id = any($1::uuid[]) and finished_at is not null`,
    [ids],
  )
  return new Map(
    r.rows.map((row) => [
      row.id,
      { acceptedAtMs: row.accepted, claimedAtMs: row.claimed, committedAtMs: row.committed },
    ]),
  )
}

/**
 * Of `ids`, those with no terminal row (lost) and those claimed more than once (run twice); the
 * primary key already rules out a second row.
 */
export async function auditPlainLedger(
  pool: pg.Pool,
  ids: readonly string[],
): Promise<{ lost: number; duplicates: number }> {
  const r = await pool.query<{ terminal: number; reclaimed: number }>(
    `select count(*) filter (where status = 'terminal')::int as terminal,
            count(*) filter (where owner_generation > 1)::int as reclaimed
     from attempts where id = any($1::uuid[])`,
    [ids],
  )
  const row = r.rows[0] ?? { terminal: 0, reclaimed: 0 }
  return { lost: new Set(ids).size - row.terminal, duplicates: row.reclaimed }
}
