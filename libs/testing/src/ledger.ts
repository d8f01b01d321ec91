import { sql } from 'kysely'
import type { Db } from '@baton/store'

/** The audit trail of one attempt, oldest first: `['accepted', 'claimed', 'committed']`. */
export async function transitionEvents(db: Db, attemptId: string): Promise<string[]> {
  const result = await sql<{ event: string }>`
    select event from attempt_transitions where attempt_id = ${attemptId} order by id
  `.execute(db)
  return result.rows.map((row) => row.event)
}
