import { sql } from 'kysely'
import type { Db } from './db.ts'

/**
 * Why Postgres would not keep the ledger in shape, for a warning at start-up; empty when nothing
 * stands in the way. Autovacuum analyzes `attempts` (migration `0010` says how often), so each
 * connection's plans follow the table as it grows, and it removes the dead rows every claim and
 * commit leaves behind. With it off, neither happens: statements plan on statistics that never
 * come and read ever more dead rows.
 */
export async function ledgerMaintenanceGaps(db: Db): Promise<string[]> {
  const { rows } = await sql<{
    autovacuum: string
    track_counts: string
    attempts_options: string[] | null
  }>`
    select current_setting('autovacuum') as autovacuum,
           current_setting('track_counts') as track_counts,
           (select reloptions from pg_class where oid = to_regclass('attempts')) as attempts_options
  `.execute(db)
  const [settings] = rows
  if (settings === undefined) return []
  const gaps: string[] = []
  if (settings.autovacuum !== 'on') gaps.push('autovacuum is off on the Postgres server')
  if (settings.track_counts !== 'on') {
    gaps.push('track_counts is off on the Postgres server, so autovacuum cannot tell what changed')
  }
  if (settings.attempts_options?.includes('autovacuum_enabled=false') === true) {
    gaps.push('autovacuum is disabled on the attempts table (autovacuum_enabled=false)')
  }
  return gaps
}
