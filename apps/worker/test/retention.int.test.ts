// Ledger retention as a worker runs it: the reconciler's pass removes what ended before the
// retention, with its history, keeps what ended since, and counts what it removed.
import { sql } from 'kysely'
import { describe, expect, test } from '@baton/testing'
import { accept, enqueue, startRuntime, untilTerminal } from './support/worker-harness.ts'

describe('ledger retention in the reconciler', () => {
  test('a pass removes attempts that ended before LEDGER_RETENTION_MS with their transitions, and keeps younger ones', async ({
    db,
    databaseUrl,
    redisUrl,
    queuePrefix,
    track,
  }) => {
    // The timer is off: this test runs the passes.
    const runtime = await startRuntime({ databaseUrl, redisUrl, queuePrefix, track }, undefined, {
      RECONCILE_INTERVAL_MS: '600000',
      LEDGER_RETENTION_MS: '3600000',
    })
    const old = await accept(db, 'old')
    const young = await accept(db, 'young')
    await enqueue({ redisUrl, queuePrefix }, old, young)
    await untilTerminal(db, old)
    await untilTerminal(db, young)
    await sql`
      update attempts set terminal_at = terminal_at - interval '2 hours' where id = ${old}::uuid
    `.execute(db)

    expect((await runtime.reconciler.runOnce()).removed).toBe(1)
    const left = await sql<{ id: string; transitions: number }>`
      select a.id, (select count(*)::int from attempt_transitions t where t.attempt_id = a.id)
        as transitions
      from attempts a where a.id = any(${[old, young]}::uuid[])`.execute(db)
    expect(left.rows).toEqual([{ id: young, transitions: 3 }])
    const orphans = await sql<{ n: number }>`
      select count(*)::int as n from attempt_transitions where attempt_id = ${old}::uuid
    `.execute(db)
    expect(orphans.rows[0]?.n).toBe(0)
    expect((await runtime.reconciler.runOnce()).removed).toBe(0)
    const retention = await runtime.metrics.reconcilerActions.get()
    expect(retention.values).toContainEqual(
      expect.objectContaining({ labels: { action: 'retention' }, value: 1 }),
    )
    await runtime.shutdownChecked(5_000)
  })
})
