import { sql } from 'kysely'
import { describe, eventually, expect, test, transitionEvents } from '@baton/testing'

describe('faults against real processes', () => {
  test('a worker whose event loop stalls past its lease: process loss is recorded, the stale owner writes nothing', async ({
    baton,
    db,
  }) => {
    const h = await baton()
    const stalled = h.worker
    const { attemptId } = await h.delegateRunning('stall', { output: 'late', delayMs: 2500 })
    // Freeze the whole process (event loop, timers, heartbeats) for longer than its lease.
    stalled.kill('SIGSTOP')
    await h.startWorker()
    const view = await h.get(`/v1/attempts/${attemptId}/wait?timeoutMs=10000`)
    expect(view.body).toMatchObject({
      status: 'terminal',
      stopReason: 'error',
      failureCategory: 'process_lost',
    })
    stalled.kill('SIGCONT')
    // The revived owner learns of its loss from the ledger (its renewal, or its commit refused),
    // and has written nothing.
    await eventually(
      async () => (/lease lost|terminal commit refused/.test(stalled.output()) ? true : undefined),
      { timeoutMs: 30_000, what: 'the revived owner to learn of its loss' },
    )
    expect(await transitionEvents(db, attemptId)).toEqual(['accepted', 'claimed', 'process_lost'])
  })

  test('Postgres backends terminated mid-run: owners keep their leases and the commit still lands', async ({
    baton,
    db,
  }) => {
    const h = await baton()
    const { attemptId } = await h.delegateRunning('pgkill', { output: 'survived', delayMs: 1200 })
    const killed = await sql<{ n: number }>`
      select count(*)::int as n from (
        select pg_terminate_backend(pid) from pg_stat_activity
        where datname = current_database() and pid <> pg_backend_pid()
      ) k
    `.execute(db)
    expect(killed.rows[0]?.n).toBeGreaterThan(0)
    const view = await h.get(`/v1/attempts/${attemptId}/wait?timeoutMs=10000`)
    expect(view.body).toMatchObject({
      status: 'terminal',
      stopReason: 'completed',
      output: 'survived',
    })
    expect(await transitionEvents(db, attemptId)).toEqual(['accepted', 'claimed', 'committed'])
  })
})
