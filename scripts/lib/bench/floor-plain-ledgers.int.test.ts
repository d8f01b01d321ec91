import { randomUUID } from 'node:crypto'
import pg from 'pg'
import { expect, test } from '@baton/testing'
import { dropDatabase, withDatabase } from '../services.ts'
import {
  auditPlainLedger,
  plainLedgerReader,
  plainLedgerTimes,
  preparePlainLedgerDatabase,
} from './floor-bare.ts'
import { plainAccepts, plainExecutions } from './floor-bare-ledger.ts'
import { PLAIN_LEDGERS } from './floor-required-ledger.ts'
import {
  expectOrderedAndDrained,
  startFloorWithLedger,
  submitThenWait,
} from './floor-test-support.ts'
import { NOOP_PROMPT } from './http-load.ts'

test.for(['bare', 'required'] as const)(
  'the queue floor with the %s ledger writes, claims under a fence and commits every delegation, in that order',
  async (kind, { redisUrl, queuePrefix, databaseUrl }) => {
    const ledger = PLAIN_LEDGERS[kind]
    // The ledger's own database, beside the test's.
    const url = withDatabase(databaseUrl, `floor_${kind}_${randomUUID().slice(0, 8)}`)
    await preparePlainLedgerDatabase(url, ledger)
    const pool = new pg.Pool({ connectionString: url, max: 2 })
    const { services, client } = await startFloorWithLedger({ redisUrl, queuePrefix }, url, {
      FLOOR_LEDGER: kind,
    })
    try {
      const input = { sessionId: `floor-${kind}`, name: 'scripted', prompt: NOOP_PROMPT }
      const { ids, waited } = await submitThenWait(client, input)
      await expectOrderedAndDrained(
        await plainLedgerTimes(
          pool,
          waited.map((w) => w.attemptId),
        ),
        plainLedgerReader(pool),
      )
      const rows = await pool.query<{ status: string; owner_generation: number; n: number }>(
        `select status, owner_generation, count(*)::int as n from attempts
         where id = any($1::uuid[]) and owner_id is not null and stop_reason = 'completed'
         group by status, owner_generation`,
        [ids],
      )
      expect(rows.rows).toEqual([{ status: 'terminal', owner_generation: 1, n: 50 }])
      expect(await auditPlainLedger(pool, ids)).toEqual({ lost: 0, duplicates: 0 })
      if (kind === 'required') await expectRequiredRecords(pool, ids)

      // The audit counts what it should: an id never written is lost, a second claim a duplicate.
      await pool.query(`update attempts set owner_generation = 2 where id = $1`, [ids[0]])
      expect(await auditPlainLedger(pool, [...ids, randomUUID()])).toEqual({
        lost: 1,
        duplicates: 1,
      })

      // The claim and the commit are fenced: a second claim and a commit under a stale or foreign
      // fence are refused, and the attempt keeps its one claim.
      const attemptId = await plainAccepts(pool, ledger)(input)
      const bell = { redisUrl, prefix: queuePrefix }
      const mine = plainExecutions(pool, randomUUID(), bell, ledger)
      const theirs = plainExecutions(pool, randomUUID(), bell, ledger)
      const generation = await mine.claim(attemptId)
      await expect(theirs.claim(attemptId)).rejects.toThrow(/claim was refused/)
      const result = { stopReason: 'completed' as const, output: 'late', failureCategory: null }
      await expect(mine.commit(attemptId, generation + 1, result)).rejects.toThrow(/commit/)
      await expect(theirs.commit(attemptId, generation, result)).rejects.toThrow(/commit/)
      await mine.commit(attemptId, generation, result)
      await Promise.all([mine.close(), theirs.close()])
      expect(await auditPlainLedger(pool, [attemptId])).toEqual({ lost: 0, duplicates: 0 })
    } finally {
      for (const s of services) await s.close()
      await pool.end()
      await dropDatabase(url)
    }
  },
)

/**
 * The required ledger wrote what it stands for: per attempt its own agent, its three transitions in
 * order under the generation that made each, and a fingerprint; and its agent cannot take a second
 * active attempt.
 */
async function expectRequiredRecords(pool: pg.Pool, ids: readonly string[]): Promise<void> {
  const records = await pool.query<{ agents: number; fingerprints: number; audits: string[] }>(
    `select count(distinct ag.id)::int as agents,
            count(distinct a.fingerprint)::int as fingerprints,
            array_agg(distinct t.steps) as audits
     from attempts a
     join agents ag on ag.id = a.agent_id and ag.session_id = a.session_id and ag.name = a.name
     join lateral (
       select string_agg(to_status || ':' || owner_generation, ' ' order by at, to_status <> 'accepted',
                         to_status = 'terminal') as steps
       from attempt_transitions where attempt_id = a.id
     ) t on true
     where a.id = any($1::uuid[]) and a.fingerprint ~ '^[0-9a-f]{64}$'`,
    [ids],
  )
  expect(records.rows).toEqual([
    { agents: 50, fingerprints: 50, audits: ['accepted:0 running:1 terminal:1'] },
  ])
  const [first] = ids
  await pool.query(`update attempts set status = 'running' where id = $1`, [first])
  await expect(
    pool.query(
      `insert into attempts (id, agent_id, session_id, name, prompt)
       select gen_random_uuid(), agent_id, session_id, name, prompt from attempts where id = $1`,
      [first],
    ),
  ).rejects.toThrow(/attempts_one_active_per_agent/)
  await pool.query(`update attempts set status = 'terminal' where id = $1`, [first])
}
