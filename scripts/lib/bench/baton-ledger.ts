import { sql } from 'kysely'
import type { Db } from '@baton/store'
import { countedLedger, type LedgerReader } from './http-load.ts'
import type { LedgerTimes } from './wait-steps.ts'

/** The bench's reads of Baton's ledger (benchmark tooling, not a product code path). */
export function batonLedger(db: Db): LedgerReader {
  return countedLedger({
    async openCount() {
      const r = await sql<{
        open: number
      }>`select count(*)::int as open from attempts where status <> 'terminal'`.execute(db)
      return r.rows[0]?.open ?? 0
    },
    async span() {
      const r = await sql<{ seconds: number; n: number }>`
        select extract(epoch from max(terminal_at) - min(created_at))::float8 as seconds,
               count(*)::int as n
        from attempts where status = 'terminal'
      `.execute(db)
      return { seconds: r.rows[0]?.seconds ?? 0, n: r.rows[0]?.n ?? 0 }
    },
  })
}

/** When the accept, claim and commit statements of each terminal attempt began, epoch ms. */
export async function ledgerTimes(
  db: Db,
  attemptIds: readonly string[],
): Promise<Map<string, LedgerTimes>> {
  if (attemptIds.length === 0) return new Map()
  const r = await sql<{ id: string; accepted: number; claimed: number; committed: number }>`
    select id,
           extract(epoch from created_at)::float8 * 1000 as accepted,
           extract(epoch from started_at)::float8 * 1000 as claimed,
           extract(epoch from terminal_at)::float8 * 1000 as committed
    from attempts
    where id = any(${[...attemptIds]}::uuid[]) and started_at is not null and terminal_at is not null
  `.execute(db)
  return new Map(
    r.rows.map((row) => [
      row.id,
      { acceptedAtMs: row.accepted, claimedAtMs: row.claimed, committedAtMs: row.committed },
    ]),
  )
}
