import { sql } from 'kysely'
import type { Db } from '@baton/store'
import { countedLedger, type LedgerReader } from './http-load.ts'

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
