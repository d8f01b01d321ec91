// Ledger retention as a worker runs it: the reconciler's pass removes what ended before the
// retention, with its history, keeps what ended since, and counts what it removed.
import { sql } from 'kysely'
import { describe, eventually, expect, test } from '@baton/testing'
import { setTimeout as sleep } from 'node:timers/promises'
import type { Db } from '@baton/store'
import {
  accept,
  enqueue,
  startRuntime,
  untilTerminal,
  type WorkerTestContext,
} from './support/worker-harness.ts'

/** Of `ids`, those still in the ledger, oldest terminal first. */
async function left(db: Db, ids: readonly string[]): Promise<string[]> {
  const r = await sql<{ id: string }>`
    select id from attempts where id = any(${ids}::uuid[]) order by terminal_at`.execute(db)
  return r.rows.map((row) => row.id)
}

/** Dates `old` attempts over two hours ago, a minute apart, in their order (oldest first). */
async function endedLongAgo(db: Db, old: readonly string[]): Promise<void> {
  await sql`
    update attempts set terminal_at = now() - interval '2 hours'
                                      - (${old.length} - array_position(${old}::uuid[], id)) * interval '1 minute'
    where id = any(${old}::uuid[])`.execute(db)
}

/**
 * Holds a transition of `attemptId` in a transaction of its own until `release()`; resolves once
 * it is held. A retention batch that removes the attempt waits for it whole.
 */
async function holdTransition(db: Db, attemptId: string) {
  let release: () => void = () => undefined
  const released = new Promise<void>((resolve) => {
    release = resolve
  })
  let held: () => void = () => undefined
  const holding = new Promise<void>((resolve) => {
    held = resolve
  })
  const holder = db.transaction().execute(async (trx) => {
    await sql`select 1 from attempt_transitions where attempt_id = ${attemptId}::uuid for update`.execute(
      trx,
    )
    held()
    await released
  })
  await holding
  return {
    async release() {
      release()
      await holder
    },
  }
}

/** Resolves once a retention batch waits for a row lock. */
async function untilBatchWaits(db: Db): Promise<void> {
  await eventually(
    async () => {
      const r = await sql<{ n: number }>`
        select count(*)::int as n from pg_stat_activity
        where wait_event_type = 'Lock' and strpos(query, 'ns as materialized') > 0
      `.execute(db)
      return (r.rows[0]?.n ?? 0) > 0 ? true : undefined
    },
    { what: 'a retention batch waiting for the held transition' },
  )
}

/**
 * A worker whose reconciler runs only when the test says, with a retention of an hour in batches
 * of four, and `count` delegations it ran to their end, in the order of `ids`.
 */
async function drainingRuntime(
  env: WorkerTestContext & { readonly db: Db },
  count: number,
  settings: Record<string, string> = {},
) {
  const runtime = await startRuntime(env, undefined, {
    RECONCILE_INTERVAL_MS: '600000',
    LEDGER_RETENTION_MS: '3600000',
    LEDGER_RETENTION_BATCH: '4',
    // A batch that meets a held row waits for it as long as the test needs.
    DB_LOCK_TIMEOUT_MS: '120000',
    DB_STATEMENT_TIMEOUT_MS: '120000',
    ...settings,
  })
  const ids = await Promise.all(Array.from({ length: count }, (_, i) => accept(env.db, `d-${i}`)))
  await enqueue(env, ...ids)
  for (const id of ids) await untilTerminal(env.db, id)
  return { runtime, ids }
}

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
    const remaining = await sql<{ id: string; transitions: number }>`
      select a.id, (select count(*)::int from attempt_transitions t where t.attempt_id = a.id)
        as transitions
      from attempts a where a.id = any(${[old, young]}::uuid[])`.execute(db)
    expect(remaining.rows).toEqual([{ id: young, transitions: 3 }])
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
    const { runtime, ids } = await drainingRuntime(
      { db, databaseUrl, redisUrl, queuePrefix, track },
      13,
    )
    // Twelve ended over two hours ago, a minute apart, oldest first; the last one a minute inside
    // the retention.
    const old = ids.slice(0, 12)
    const [edge] = ids.slice(12)
    await endedLongAgo(db, old)
    await sql`
      update attempts set terminal_at = now() - interval '59 minutes' where id = ${edge}::uuid
    `.execute(db)
    const removedSoFar = async () =>
      (await runtime.metrics.reconcilerActions.get()).values.find(
        (v) => v.labels.action === 'retention',
      )?.value ?? 0

    // A transition of the sixth oldest held by another transaction: the second batch (oldest
    // five to eight) waits for it; the first is done by then.
    const hold = await holdTransition(db, old[5] ?? '')
    const pass = runtime.reconciler.runOnce()
    try {
      await untilBatchWaits(db)
      // One batch committed, of at most four attempts, the oldest; the next is one statement that
      // waits whole.
      expect(await left(db, ids)).toEqual(ids.slice(4))
      expect(await removedSoFar()).toBe(4)
      // Claims and commits go on meanwhile.
      const meanwhile = await accept(db, 'meanwhile')
      await enqueue({ redisUrl, queuePrefix }, meanwhile)
      await untilTerminal(db, meanwhile)
      expect(await left(db, ids)).toEqual(ids.slice(4))
    } finally {
      await hold.release()
    }
    // Then the rest of the backlog in the same pass, batch after batch: everything that ended
    // before the retention, nothing after it.
    expect((await pass).removed).toBe(12)
    expect(await left(db, ids)).toEqual([edge])
    expect(await removedSoFar()).toBe(12)
    expect((await runtime.reconciler.runOnce()).removed).toBe(0)
    await runtime.shutdownChecked(5_000)
  })

  test('a drain rests between batches for LEDGER_RETENTION_DUTY_PERCENT of its time, and a stop cuts the rest short', async ({
    db,
    databaseUrl,
    redisUrl,
    queuePrefix,
    track,
  }) => {
    const { runtime, ids } = await drainingRuntime(
      { db, databaseUrl, redisUrl, queuePrefix, track },
      8,
      // Batches 1 % of the time: after a batch of two seconds, a rest of over three minutes.
      { LEDGER_RETENTION_DUTY_PERCENT: '1' },
    )
    await endedLongAgo(db, ids)

    // The first batch (the oldest four) meets a held transition and lasts two seconds or more.
    const hold = await holdTransition(db, ids[1] ?? '')
    const pass = runtime.reconciler.runOnce()
    try {
      await untilBatchWaits(db)
      await sleep(2_000)
    } finally {
      await hold.release()
    }
    await eventually(async () => ((await left(db, ids)).length < ids.length ? true : undefined), {
      what: 'the first batch to commit',
    })
    // The lane rests: the next four stay, however long the machine takes to look.
    expect(await left(db, ids)).toEqual(ids.slice(4))
    // A stop ends the rest at once (without it, this test would outlast its timeout).
    await runtime.reconciler.stop()
    expect((await pass).removed).toBe(4)
    expect(await left(db, ids)).toEqual(ids.slice(4))
    await runtime.shutdownChecked(5_000)
  })
})
