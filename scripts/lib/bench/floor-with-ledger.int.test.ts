import { sql } from 'kysely'
import { createBatonClient } from '@baton/client'
import { auditLedger } from '@baton/testing/ledger-audit'
import { eventually, expect, freePort, test } from '@baton/testing'
import { batonLedger, ledgerTimes } from './baton-ledger.ts'
import { startFloorService } from './floor.ts'
import { NOOP_PROMPT } from './http-load.ts'
import { measureCancels } from './cancel.ts'

test("the queue floor given a database makes Baton's accept, claim and commit for every delegation, in that order", async ({
  redisUrl,
  queuePrefix,
  databaseUrl,
  db,
}) => {
  const port = await freePort()
  const services = await startFloorService(
    {
      DATABASE_URL: databaseUrl,
      REDIS_URL: redisUrl,
      QUEUE_PREFIX: queuePrefix,
      PORT: String(port),
      WORKER_CONCURRENCY: '10',
    },
    2,
  )
  const client = createBatonClient({ baseUrl: `http://127.0.0.1:${port}` })
  try {
    const input = { sessionId: 'floor-ledger', name: 'scripted', prompt: NOOP_PROMPT }
    const accepted = await Promise.all(Array.from({ length: 40 }, () => client.delegate(input)))
    const waited = []
    for (let i = 0; i < 10; i += 1) {
      // Each checked as it answers: a wait the bell never ends fails the test at its first bound,
      // well inside the test's timeout, and the processes are stopped.
      const view = await client.delegateAndWait(input, 3_000)
      expect(view).toMatchObject({ status: 'terminal', stopReason: 'completed', output: 'ok' })
      // Answered from Baton's settlement bell: the terminal view the commit returned.
      expect(view).toMatchObject({
        outputBytes: 2,
        digest: expect.stringMatching(/^baton\.result/),
      })
      waited.push(view)
    }
    // A wait answers after the commit: its attempt is terminal in the ledger by then.
    const ids = [...accepted.map((a) => a.attemptId), ...waited.map((w) => w.attemptId)]
    const times = await ledgerTimes(
      db,
      waited.map((w) => w.attemptId),
    )
    expect(times.size).toBe(10)
    for (const t of times.values()) {
      expect(t.acceptedAtMs).toBeLessThan(t.claimedAtMs ?? Number.NaN)
      expect(t.claimedAtMs).toBeLessThan(t.committedAtMs)
    }

    const reader = batonLedger(db)
    await eventually(async () => ((await reader.openCount()) === 0 ? true : undefined), {
      what: 'every attempt of the floor to end',
    })
    expect((await reader.span()).n).toBe(50)
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
