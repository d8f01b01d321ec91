import { sql } from 'kysely'
import { auditLedger } from '@baton/testing/ledger-audit'
import { expect, test } from '@baton/testing'
import { batonLedger, ledgerTimes } from './baton-ledger.ts'
import { NOOP_PROMPT } from './http-load.ts'
import { measureCancels } from './cancel.ts'
import {
  expectOrderedAndDrained,
  startFloorWithLedger,
  submitThenWait,
} from './floor-test-support.ts'

test("the queue floor given a database makes Baton's accept, claim and commit for every delegation, in that order", async ({
  redisUrl,
  queuePrefix,
  databaseUrl,
  db,
}) => {
  const { services, client } = await startFloorWithLedger({ redisUrl, queuePrefix }, databaseUrl)
  try {
    const input = { sessionId: 'floor-ledger', name: 'scripted', prompt: NOOP_PROMPT }
    const { ids, waited } = await submitThenWait(client, input, (view) => {
      // Answered from Baton's settlement bell: the terminal view the commit returned.
      expect(view).toMatchObject({
        outputBytes: 2,
        digest: expect.stringMatching(/^baton\.result/),
      })
    })
    await expectOrderedAndDrained(
      await ledgerTimes(
        db,
        waited.map((w) => w.attemptId),
      ),
      batonLedger(db),
    )
    // Each attempt went through one fenced claim and one fenced commit, with their audit rows.
    const rows = await sql<{ status: string; owner_generation: number; transitions: string }>`
      select a.status, a.owner_generation,
             string_agg(t.event, ',' order by t.id) as transitions
      from attempts a join attempt_transitions t on t.attempt_id = a.id
      where a.id = any(${ids}::uuid[])
      group by a.id
    `.execute(db)
    expect(rows.rows).toHaveLength(50)
    for (const row of rows.rows) {
      expect(row).toEqual({
        status: 'terminal',
        owner_generation: 1,
        transitions: 'accepted,claimed,committed',
      })
    }
    const audit = await auditLedger(db, ids)
    expect(audit.lost).toBe(0)
    expect(audit.duplicates).toBe(0)

    // A cancelled child commits its aborted terminal before the wait answers.
    const cancels = await measureCancels(client, 2, false, [])
    expect(cancels.notAborted).toBe(0)
    const aborted = await sql<{ n: number }>`
      select count(*)::int as n from attempts
      where stop_reason = 'aborted' and failure_category = 'cancelled'
    `.execute(db)
    expect(aborted.rows[0]?.n).toBe(2)
  } finally {
    for (const s of services) await s.close()
  }
})
