import { randomUUID } from 'node:crypto'
import { sql } from 'kysely'
import { describe, expect, test } from '@baton/testing'
import { createDb, type Db } from '../db.ts'
import { claimAttempt } from './claim-attempt.ts'
import { getAttempt, getAttempts } from './get-attempt.ts'
import { accept } from './test-support.ts'

/** How Postgres planned the attempt read prepared on this (one-connection) pool. */
async function readPlans(db: Db): Promise<{ generic: number; custom: number }> {
  const { rows } = await sql<{ generic: string; custom: string }>`
    select coalesce(sum(generic_plans), 0) as generic, coalesce(sum(custom_plans), 0) as custom
    from pg_prepared_statements where statement like '%steer_sequence%'`.execute(db)
  const [row] = rows
  return { generic: Number(row?.generic), custom: Number(row?.custom) }
}

describe('getAttempts', () => {
  test('one id and many ids read the same records; a missing id is absent', async ({ db }) => {
    const queued = await accept(db)
    const running = await accept(db)
    await claimAttempt(db, { attemptId: running.attemptId, ownerId: 'w1', leaseTtlMs: 10_000 })
    const missing = randomUUID()

    const many = await getAttempts(db, [queued.attemptId, running.attemptId, missing])
    expect([...many.keys()].sort()).toEqual([queued.attemptId, running.attemptId].sort())
    expect(many.get(running.attemptId)).toMatchObject({ status: 'running' })
    for (const id of [queued.attemptId, running.attemptId]) {
      expect((await getAttempts(db, [id])).get(id)).toEqual(many.get(id))
    }
    expect((await getAttempts(db, [missing])).size).toBe(0)
    expect(await getAttempt(db, missing)).toBeUndefined()
  })

  test('a read of one attempt settles on one generic plan instead of planning every time', async ({
    db,
    databaseUrl,
  }) => {
    const { attemptId } = await accept(db)
    const reader = createDb({ connectionString: databaseUrl, maxConnections: 1 })
    try {
      for (let i = 0; i < 12; i++) {
        expect((await getAttempts(reader, [attemptId])).get(attemptId)?.id).toBe(attemptId)
      }
      // Postgres tries five custom plans before it compares them with the generic one.
      expect(await readPlans(reader)).toEqual({ generic: 7, custom: 5 })
    } finally {
      await reader.destroy()
    }
  })
})
