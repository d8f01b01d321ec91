import { sql } from 'kysely'
import type { Db } from './db.ts'

/** A round trip to Postgres; rejects when it is unreachable. */
export async function pingStore(db: Db): Promise<void> {
  await sql`select 1`.execute(db)
}
