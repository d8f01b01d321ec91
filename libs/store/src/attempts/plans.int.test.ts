import { randomUUID } from 'node:crypto'
import { sql } from 'kysely'
import { describe, expect, test } from '@baton/testing'
import { createDb, type Db } from '../db.ts'
import { acceptDelegations } from './accept-delegations.ts'
import { getAttempts } from './get-attempt.ts'
import { accept } from './test-support.ts'

/**
 * How Postgres planned the statements prepared on this one-connection pool whose text contains
 * `marker`: a hot statement that gets a custom plan on every run pays its planning every time.
 */
async function plans(db: Db, marker: string): Promise<{ generic: number; custom: number }> {
  const { rows } = await sql<{ generic: string; custom: string }>`
    select coalesce(sum(generic_plans), 0) as generic, coalesce(sum(custom_plans), 0) as custom
    from pg_prepared_statements where strpos(statement, ${marker}) > 0`.execute(db)
  const [row] = rows
  return { generic: Number(row?.generic), custom: Number(row?.custom) }
}

/** Postgres tries five custom plans before it compares them with the generic one. */
const SETTLED = { generic: 7, custom: 5 }

describe('hot ledger statements keep one generic plan', () => {
  test('a read of one attempt', async ({ db, databaseUrl }) => {
    const { attemptId } = await accept(db)
    const reader = createDb({ connectionString: databaseUrl, maxConnections: 1 })
    try {
      for (let i = 0; i < 12; i++) {
        expect((await getAttempts(reader, [attemptId])).get(attemptId)?.id).toBe(attemptId)
      }
      expect(await plans(reader, 'steer_sequence')).toEqual(SETTLED)
    } finally {
      await reader.destroy()
    }
  })

  test('the accept of one delegation', async ({ databaseUrl }) => {
    const api = createDb({ connectionString: databaseUrl, maxConnections: 1 })
    try {
      for (let i = 0; i < 12; i++) {
        const attemptId = randomUUID()
        const [outcome] = await acceptDelegations(api, [
          {
            namespaceId: 'default',
            sessionId: `plans-${i}`,
            name: 'scripted',
            prompt: [{ type: 'text', text: 'hello' }],
            metadata: {},
            attemptId,
            newAgentId: randomUUID(),
          },
        ])
        expect(outcome).toMatchObject({ kind: 'accepted', attemptId })
      }
      expect(await plans(api, 'insert into attempts')).toEqual(SETTLED)
    } finally {
      await api.destroy()
    }
  })
})
