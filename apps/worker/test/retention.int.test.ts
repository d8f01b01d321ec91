// Ledger retention as a worker runs it: the reconciler's pass removes what ended before the
// retention, with its history, keeps what ended since, and counts what it removed.
import { sql } from 'kysely'
import { describe, eventually, expect, test } from '@baton/testing'
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

  test('a backlog drains batch after batch, each one statement of at most LEDGER_RETENTION_BATCH; a claim goes through while a batch waits; nothing younger than the setting goes', async ({
    db,
    databaseUrl,
    redisUrl,
    queuePrefix,
    track,
  }) => {
    const runtime = await startRuntime({ databaseUrl, redisUrl, queuePrefix, track }, undefined, {
      RECONCILE_INTERVAL_MS: '600000',
      LEDGER_RETENTION_MS: '3600000',
      LEDGER_RETENTION_BATCH: '4',
      // The batch that meets the held row waits for it as long as the test needs.
      DB_LOCK_TIMEOUT_MS: '120000',
      DB_STATEMENT_TIMEOUT_MS: '120000',
    })
    const ids = await Promise.all(Array.from({ length: 13 }, (_, i) => accept(db, `drain-${i}`)))
    await enqueue({ redisUrl, queuePrefix }, ...ids)
    for (const id of ids) await untilTerminal(db, id)
    // Twelve ended over two hours ago, a minute apart, oldest first; the last one a minute inside
    // the retention.
    const old = ids.slice(0, 12)
    const [edge] = ids.slice(12)
    await sql`
      update attempts set terminal_at = now() - interval '2 hours'
                                        - (12 - array_position(${old}::uuid[], id)) * interval '1 minute'
      where id = any(${old}::uuid[])`.execute(db)
    await sql`
      update attempts set terminal_at = now() - interval '59 minutes' where id = ${edge}::uuid
    `.execute(db)
    const left = async () => {
      const r = await sql<{ id: string }>`
        select id from attempts where id = any(${ids}::uuid[]) order by terminal_at`.execute(db)
      return r.rows.map((row) => row.id)
    }
    const removedSoFar = async () =>
      (await runtime.metrics.reconcilerActions.get()).values.find(
        (v) => v.labels.action === 'retention',
      )?.value ?? 0

    // A transition of the sixth oldest held by another transaction: the second batch (oldest
    // five to eight) waits for it; the first is done by then.
    let release: () => void = () => undefined
    const released = new Promise<void>((resolve) => {
      release = resolve
    })
    let held: () => void = () => undefined
    const holding = new Promise<void>((resolve) => {
      held = resolve
    })
    const holder = db.transaction().execute(async (trx) => {
      await sql`select 1 from attempt_transitions where attempt_id = ${old[5]}::uuid for update`.execute(
        trx,
      )
      held()
      await released
    })
    await holding
    const pass = runtime.reconciler.runOnce()
    try {
      await eventually(
        async () => {
          const r = await sql<{ n: number }>`
            select count(*)::int as n from pg_stat_activity
            where wait_event_type = 'Lock' and strpos(query, 'with ns as materialized') > 0
          `.execute(db)
          return (r.rows[0]?.n ?? 0) > 0 ? true : undefined
        },
        { what: 'a retention batch waiting for the held transition' },
      )
      // One batch committed, of at most four attempts, the oldest; the next is one statement that
      // waits whole.
      expect(await left()).toEqual(ids.slice(4))
      expect(await removedSoFar()).toBe(4)
      // Claims and commits go on meanwhile.
      const meanwhile = await accept(db, 'meanwhile')
      await enqueue({ redisUrl, queuePrefix }, meanwhile)
      await untilTerminal(db, meanwhile)
      expect(await left()).toEqual(ids.slice(4))
    } finally {
      release()
      await holder
    }
    // Then the rest of the backlog in the same pass, batch after batch: everything that ended
    // before the retention, nothing after it.
    expect((await pass).removed).toBe(12)
    expect(await left()).toEqual([edge])
    expect(await removedSoFar()).toBe(12)
    expect((await runtime.reconciler.runOnce()).removed).toBe(0)
    await runtime.shutdownChecked(5_000)
  })
})
