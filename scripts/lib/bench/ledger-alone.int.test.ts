import { sql } from 'kysely'
import { expect, test } from '@baton/testing'
import { runLedgerAlone } from './ledger-alone.ts'

test("runs Baton's own accept, claim and commit statements to a terminal ledger, a batch at a time", async ({
  db,
}) => {
  const run = await runLedgerAlone(db, 25, 10)
  // Three batches (10, 10, 5), three statements each.
  expect(run).toEqual({ delegations: 25, statements: 9, refused: 0 })
  const rows = await sql<{ status: string; stop_reason: string; n: number }>`
    select status, stop_reason, count(*)::int as n from attempts group by 1, 2
  `.execute(db)
  expect(rows.rows).toEqual([{ status: 'terminal', stop_reason: 'completed', n: 25 }])
  const transitions = await sql<{ event: string; n: number }>`
    select event, count(*)::int as n from attempt_transitions group by 1 order by 1
  `.execute(db)
  expect(transitions.rows).toEqual([
    { event: 'accepted', n: 25 },
    { event: 'claimed', n: 25 },
    { event: 'committed', n: 25 },
  ])
})

test('refuses a batch size below one', async ({ db }) => {
  await expect(runLedgerAlone(db, 5, 0)).rejects.toThrow(RangeError)
})
