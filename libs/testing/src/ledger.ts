import { randomUUID } from 'node:crypto'
import { sql } from 'kysely'
import pg from 'pg'
import { getAttempt, type AttemptRecord, type Db } from '@baton/store'
import { eventually } from './eventually.ts'
import { withDatabase } from './global-setup.ts'

/**
 * A fresh, empty database (not cloned from the template), dropped after `run`: for tests of the
 * migrations and of the schema's variants.
 */
export async function withEmptyDatabase(
  rootUrl: string,
  run: (url: string) => Promise<void>,
): Promise<void> {
  const name = `baton_m_${randomUUID().replaceAll('-', '').slice(0, 12)}`
  const admin = new pg.Client({ connectionString: rootUrl })
  await admin.connect()
  await admin.query(`create database ${name}`)
  try {
    await run(withDatabase(rootUrl, name))
  } finally {
    await admin.query(`drop database ${name} with (force)`)
    await admin.end()
  }
}

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
