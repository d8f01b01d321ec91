import pg from 'pg'
import { sql } from 'kysely'
import { createLogger } from '@baton/observability'
import { findUndeliveredSteering, recordSteering, retryTransient, type Db } from '@baton/store'
import type { ContentBlock } from '@baton/subagents'
import { describe, eventually, expect, test } from '@baton/testing'
import { heldAttempt } from './support/worker-harness.ts'
import { createSteeringDelivery } from '../src/steering/steering-delivery.ts'

const quiet = createLogger({ service: 'test', level: 'silent' })

/** The mark's statement, as `pg_stat_activity` shows it while it waits. */
const MARK = '%update attempt_messages m set delivered_at%'
/** The delivery's read of the ledger, likewise. */
const READ = '%from attempt_messages%delivered_at is null%'

describe('steering delivery', () => {
  test('drain waits for a delivery started without waiting, until its fenced mark lands', async ({
    db,
    databaseUrl,
  }) => {
    const { attemptId, keeper, steering, received } = await steeredAttempt(db)
    let drained = false
    await whileBlocked(databaseUrl, attemptId, 'row', async () => {
      void steering.deliver(attemptId)
      const drain = steering.drain().then(() => (drained = true))
      await eventually(async () => (received.length === 1 ? true : undefined))
      await new Promise((r) => setTimeout(r, 300))
      expect(drained).toBe(false)
      return { waiting: drain }
    })
    expect(drained).toBe(true)
    expect(await findUndeliveredSteering(db, { attemptId, afterSequence: 0 })).toEqual([])
    expect(await markedCount(db, attemptId)).toBe(1)
    await keeper.stop()
  })

  test('finish resolves only once the mark of what the run was handed is written', async ({
    db,
    databaseUrl,
  }) => {
    const { attemptId, keeper, steering, received } = await steeredAttempt(db)
    let finished = false
    await whileBlocked(databaseUrl, attemptId, 'row', async () => {
      void steering.deliver(attemptId)
      await eventually(async () => (received.length === 1 ? true : undefined))
      // The run returns now, its mark still blocked: finish waits for that mark.
      const finish = steering.finish(attemptId).then(() => (finished = true))
      await new Promise((r) => setTimeout(r, 300))
      expect(finished).toBe(false)
      return { waiting: finish }
    })
    expect(finished).toBe(true)
    expect(await markedCount(db, attemptId)).toBe(1)
    await keeper.stop()
  })

  test('a message read as the run returns is never handed to it nor marked', async ({
    db,
    databaseUrl,
  }) => {
    const { attemptId, keeper, steering, received } = await steeredAttempt(db)
    await whileBlocked(databaseUrl, attemptId, 'table', async () => {
      void steering.deliver(attemptId)
      await untilWaiting(db, READ)
      return { waiting: steering.finish(attemptId) }
    })
    // Once finished, a later bell reads nothing either.
    await steering.deliver(attemptId)
    expect(received).toEqual([])
    expect(await markedCount(db, attemptId)).toBe(0)
    await keeper.stop()
  })

  test('a mark that failed is written by the next delivery, without handing the message twice', async ({
    db,
    databaseUrl,
  }) => {
    const { attemptId, keeper, steering, received } = await steeredAttempt(db)
    await whileBlocked(databaseUrl, attemptId, 'row', async () => {
      const delivery = steering.deliver(attemptId)
      await eventually(async () => (received.length === 1 ? true : undefined))
      // The session running the blocked mark dies: the mark fails.
      await untilWaiting(db, MARK, 'pg_terminate_backend(pid)')
      await delivery
      return { waiting: delivery }
    })
    expect(await markedCount(db, attemptId)).toBe(0)
    await steering.deliver(attemptId)
    expect(received).toHaveLength(1)
    expect(await markedCount(db, attemptId)).toBe(1)
    await keeper.stop()
  })
})

/**
 * A held attempt whose run records what it is handed (and never ends), attached to a steering
 * delivery that has settled its first read, with one message recorded and not yet delivered.
 */
async function steeredAttempt(db: Db) {
  const { ownerId, attemptId, keeper, execution } = await heldAttempt(db)
  const received: (readonly ContentBlock[])[] = []
  const steering = createSteeringDelivery({ db, ownerId, logger: quiet })
  steering.attach(execution, {
    id: 'steered',
    localAgent: undefined,
    result: new Promise<never>(() => undefined),
    dispose: () => Promise.resolve(),
    sendMessage: (content) => {
      received.push(content)
    },
  })
  await steering.drain()
  await recordSteering(db, { attemptId, content: [{ type: 'text', text: 'go left' }] })
  return { attemptId, keeper, steering, received }
}

/**
 * Runs `body` while another session holds the attempt's message rows (`row`: marks wait) or the
 * whole message table (`table`: reads wait too); `body` checks what it must while blocked and
 * returns what waits on the lock, which is awaited once the lock is let go.
 */
async function whileBlocked(
  databaseUrl: string,
  attemptId: string,
  what: 'row' | 'table',
  body: () => Promise<{ readonly waiting: Promise<unknown> }>,
): Promise<void> {
  const blocker = new pg.Client({ connectionString: databaseUrl })
  await blocker.connect()
  try {
    await blocker.query('begin')
    if (what === 'row') {
      await blocker.query('select 1 from attempt_messages where attempt_id = $1 for update', [
        attemptId,
      ])
    } else {
      await blocker.query('lock table attempt_messages in access exclusive mode')
    }
    const { waiting } = await body()
    await blocker.query('rollback')
    await waiting
  } finally {
    await blocker.end()
  }
}

/**
 * Waits until a statement matching `query` waits on a lock, asked outside the blocker's
 * transaction (whose view of the activity stays as it was); `act` is applied to its backend.
 */
async function untilWaiting(db: Db, query: string, act = 'true'): Promise<void> {
  await eventually(async () => {
    const rows = await sql<{ done: boolean }>`
      select ${sql.raw(act)} as done from pg_stat_activity
      where query like ${query} and wait_event_type = 'Lock'
    `.execute(db)
    return rows.rows.length === 1 && rows.rows[0]?.done === true ? true : undefined
  })
}

/**
 * Retried as every store call of the worker is: after a test terminates a backend, the pool may
 * still hand out its connection once before it notices the connection is gone.
 */
async function markedCount(db: Db, attemptId: string): Promise<number | undefined> {
  const marked = await retryTransient(
    () =>
      sql<{ n: number }>`
      select count(*)::int as n from attempt_messages
      where attempt_id = ${attemptId} and delivered_at is not null
    `.execute(db),
    { maxDelayMs: 100, maxAttempts: 5 },
  )
  return marked.rows[0]?.n
}
