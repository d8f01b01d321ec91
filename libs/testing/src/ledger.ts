import { sql } from 'kysely'
import { getAttempt, type AttemptRecord, type Db } from '@baton/store'
import { eventually } from './eventually.ts'

/** The audit trail of one attempt, oldest first: `['accepted', 'claimed', 'committed']`. */
export async function transitionEvents(db: Db, attemptId: string): Promise<string[]> {
  const result = await sql<{ event: string }>`
    select event from attempt_transitions where attempt_id = ${attemptId} order by id
  `.execute(db)
  return result.rows.map((row) => row.event)
}

/**
 * The attempt's ledger record once it has `status` (or `until` holds for it); fails after
 * `timeoutMs` (default 10 s) naming what it waited for.
 */
export function untilAttempt(
  db: Db,
  attemptId: string,
  until: AttemptRecord['status'] | ((record: AttemptRecord) => boolean),
  options: { readonly timeoutMs?: number } = {},
): Promise<AttemptRecord> {
  const holds = typeof until === 'function' ? until : (r: AttemptRecord) => r.status === until
  const what = typeof until === 'function' ? 'its condition' : `status ${until}`
  return eventually(
    async () => {
      const record = await getAttempt(db, attemptId)
      return record !== undefined && holds(record) ? record : undefined
    },
    { timeoutMs: options.timeoutMs ?? 10_000, what: `attempt ${attemptId} to reach ${what}` },
  )
}
