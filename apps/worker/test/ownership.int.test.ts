// The ownership rules of a live worker: only the ledger's confirmation of loss gives a lease up;
// every other store failure keeps it, retries, and ends in a truthful terminal.
import pg from 'pg'
import { sql } from 'kysely'
import { getAttempt, type Db } from '@baton/store'
import { NO_START_CAPABILITIES, type SubagentProvider } from '@baton/subagents'
import { createScriptedPromptProvider } from '@baton/agents'
import { describe, eventually, expect, test } from '@baton/testing'
import type { WorkerRuntime } from '../src/runtime.ts'
import {
  accept,
  acceptContinuation,
  childProvider,
  enqueue,
  heldAttempt,
  injectUpdateFault,
  startRuntime,
  untilTerminal,
} from './support/worker-harness.ts'

/** The statement `getAgentHistory` starts with. */
const HISTORY_READ = 'select "id", "session_id", "name" from "agents"%'

async function leaseExpiresAt(db: Db, attemptId: string): Promise<number> {
  const r = await sql<{ at: Date }>`
    select lease_expires_at as at from attempts where id = ${attemptId}
  `.execute(db)
  return r.rows[0]?.at.getTime() ?? 0
}

describe('ownership under store faults', () => {
  test('a transient heartbeat failure keeps ownership and the next interval renews the lease', async ({
    db,
  }) => {
    const { attemptId, keeper, execution } = await heldAttempt(db, { heartbeatIntervalMs: 100 })
    // Serialization failures (transient) for the first three renewals of this attempt.
    const fault = await injectUpdateFault(db, {
      attemptId,
      on: 'renewal',
      sqlstate: '40001',
      times: 3,
    })
    try {
      const before = await leaseExpiresAt(db, attemptId)
      keeper.start()
      await eventually(async () => ((await fault.hits()) >= 3 ? true : undefined))
      expect(execution.lost).toBe(false)
      expect(execution.signal.aborted).toBe(false)
      // The timer kept beating: a later renewal went through.
      await eventually(async () =>
        (await leaseExpiresAt(db, attemptId)) > before ? true : undefined,
      )
      expect(execution.lost).toBe(false)
      expect(keeper.get(attemptId)).toBe(execution)
    } finally {
      await keeper.stop()
      await fault.remove()
    }
  })

  test('a transient history-read failure keeps ownership and retries; the continuation completes', async ({
    services: ctx,
    db,
    databaseUrl,
  }) => {
    // A continuation of an agent with one committed turn of history, so it reads that history.
    const { attemptId } = await acceptContinuation(db, '{"output":"resumed"}')
    // A child that can resume from history (it answers without adding to it).
    const scripted = createScriptedPromptProvider()
    const resumable: SubagentProvider = {
      ...scripted,
      capabilities: { ...NO_START_CAPABILITIES, history: true },
      start: ({ history: _ignored, ...request }) => scripted.start(request),
    }
    // The agents table is locked: the worker's history read waits, and is then cut off (a
    // terminated backend, as when Postgres restarts) more often than the store's own read retry
    // allows, before the lock goes away.
    const blocker = new pg.Client({ connectionString: databaseUrl })
    await blocker.connect()
    let released = false
    let runtime: WorkerRuntime | undefined
    try {
      await blocker.query('begin')
      await blocker.query('lock table agents in access exclusive mode')
      runtime = await startRuntime(ctx, resumable)
      await enqueue(ctx, attemptId)
      for (let cut = 0; cut < 4; cut += 1) {
        await eventually(async () => {
          const r = await sql<{ n: number }>`
            select count(*)::int as n from pg_stat_activity
            where wait_event_type = 'Lock' and query like ${HISTORY_READ}
              and application_name like 'baton-worker:%'
          `.execute(db)
          return (r.rows[0]?.n ?? 0) > 0 ? true : undefined
        })
        await sql`
          select pg_terminate_backend(pid) from pg_stat_activity
          where wait_event_type = 'Lock' and query like ${HISTORY_READ}
            and application_name like 'baton-worker:%'
        `.execute(db)
      }
      expect(await getAttempt(db, attemptId)).toMatchObject({ status: 'running' })
      await blocker.query('rollback')
      released = true
    } finally {
      if (!released) await blocker.query('rollback')
      await blocker.end()
    }
    expect(await untilTerminal(db, attemptId)).toMatchObject({
      stopReason: 'completed',
      output: 'resumed',
    })
    await runtime?.shutdownChecked(5_000)
  })

  test('an unexpected commit error for one attempt keeps its lease and ends in a truthful store_fault terminal; the rest of its batch commits', async ({
    services: ctx,
    db,
  }) => {
    // Children that all answer at the same moment, so their commits share a batch.
    let release!: () => void
    const gate = new Promise<void>((resolve) => (release = resolve))
    let started = 0
    const together = childProvider(async (request) => {
      started += 1
      const text = request.prompt.map((b) => b.text).join('')
      await gate
      return { output: [{ type: 'text', text }], stopReason: 'completed' }
    })
    // The attempt ids of each terminal commit statement the worker ran.
    const commitStatements: string[][] = []
    const runtime = await startRuntime(
      ctx,
      together,
      {},
      {
        onQuery: (text, parameters) => {
          if (!text.includes("'running', 'terminal', 'committed'")) return
          const values = parameters.flatMap((p) => (Array.isArray(p) ? p : [p]))
          commitStatements.push(values.filter((v): v is string => typeof v === 'string'))
        },
      },
    )
    const ids = [await accept(db, 'a'), await accept(db, 'b'), await accept(db, 'c')]
    const offender = ids[1] ?? ''
    // The store refuses the offender's completed result with a non-transient error, every time.
    const fault = await injectUpdateFault(db, {
      attemptId: offender,
      on: 'terminal',
      sqlstate: '23514',
      stopReason: 'completed',
    })
    try {
      await enqueue(ctx, ...ids)
      await eventually(async () => (started === 3 ? true : undefined))
      const leaseBefore = await leaseExpiresAt(db, offender)
      release()
      for (const id of ids.filter((id) => id !== offender)) {
        expect(await untilTerminal(db, id)).toMatchObject({ stopReason: 'completed' })
      }
      // The offender's worker keeps renewing its lease while it retries.
      await eventually(async () =>
        (await fault.hits()) >= 2 && (await leaseExpiresAt(db, offender)) > leaseBefore
          ? true
          : undefined,
      )
      expect(await getAttempt(db, offender)).toMatchObject({ status: 'running' })
      expect(await untilTerminal(db, offender)).toMatchObject({
        stopReason: 'error',
        failureCategory: 'store_fault',
        output: '',
      })
      // The offender failed inside a batch with a neighbour, and was then retried on its own.
      expect(
        commitStatements.some(
          (values) =>
            values.includes(offender) && ids.some((id) => id !== offender && values.includes(id)),
        ),
      ).toBe(true)
    } finally {
      await fault.remove()
    }
    await runtime.shutdownChecked(5_000)
  })

  test("a panic result's terminal write survives an injected commit fault through the ordinary fenced retry loop", async ({
    services: ctx,
    db,
  }) => {
    // A provider that panics: its run's result rejects.
    const panicking = childProvider(() => Promise.reject(new Error('panic')))
    const runtime = await startRuntime(ctx, panicking)
    const attemptId = await accept(db, 'x')
    // The first three terminal writes hit serialization failures.
    const fault = await injectUpdateFault(db, {
      attemptId,
      on: 'terminal',
      sqlstate: '40001',
      times: 3,
    })
    try {
      await enqueue(ctx, attemptId)
      expect(await untilTerminal(db, attemptId)).toMatchObject({
        stopReason: 'error',
        failureCategory: 'provider_fault',
        output: '',
      })
      expect(await fault.hits()).toBe(4)
    } finally {
      await fault.remove()
    }
    await runtime.shutdownChecked(5_000)
  })
})
