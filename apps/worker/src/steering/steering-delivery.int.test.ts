import pg from 'pg'
import { sql } from 'kysely'
import { createLogger } from '@baton/observability'
import { findUndeliveredSteering, recordSteering } from '@baton/store'
import type { ContentBlock } from '@baton/subagents'
import { describe, eventually, expect, test } from '@baton/testing'
import { heldAttempt } from '../test-support.ts'
import { createSteeringDelivery } from './steering-delivery.ts'

const quiet = createLogger({ service: 'test', level: 'silent' })

describe('steering delivery', () => {
  test('drain waits for a delivery started without waiting, until its fenced mark lands', async ({
    db,
    databaseUrl,
  }) => {
    const { ownerId, attemptId, keeper, execution } = await heldAttempt(db)
    const received: (readonly ContentBlock[])[] = []
    const steering = createSteeringDelivery({ db, ownerId, logger: quiet })
    steering.attach(execution, {
      id: 'steered',
      localAgent: undefined,
      result: new Promise(() => undefined),
      dispose: () => Promise.resolve(),
      sendMessage: (content) => received.push(content),
    })
    await steering.drain()
    await recordSteering(db, { attemptId, content: [{ type: 'text', text: 'go left' }] })
    // Another session holds the message row: the delivery's mark waits for it.
    const blocker = new pg.Client({ connectionString: databaseUrl })
    await blocker.connect()
    let drained = false
    try {
      await blocker.query('begin')
      await blocker.query('select 1 from attempt_messages where attempt_id = $1 for update', [
        attemptId,
      ])
      void steering.deliver(attemptId)
      const drain = steering.drain().then(() => (drained = true))
      await eventually(async () => (received.length === 1 ? true : undefined))
      await new Promise((r) => setTimeout(r, 300))
      expect(drained).toBe(false)
      await blocker.query('rollback')
      await drain
    } finally {
      await blocker.end()
    }
    expect(await findUndeliveredSteering(db, { attemptId, afterSequence: 0 })).toEqual([])
    const marked = await sql<{ n: number }>`
      select count(*)::int as n from attempt_messages
      where attempt_id = ${attemptId} and delivered_at is not null
    `.execute(db)
    expect(marked.rows[0]?.n).toBe(1)
    await keeper.stop()
  })
})
