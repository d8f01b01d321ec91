import { randomUUID } from 'node:crypto'
import pg from 'pg'
import { sql } from 'kysely'
import { createLogger } from '@baton/observability'
import { claimAttempt, findUndeliveredSteering, recordSteering } from '@baton/store'
import type { ContentBlock } from '@baton/subagents'
import { describe, eventually, expect, test } from '@baton/testing'
import { createLeaseKeeper } from '../lease/lease-keeper.ts'
import { accept } from '../test-support.ts'
import { createSteeringDelivery } from './steering-delivery.ts'

const quiet = createLogger({ service: 'test', level: 'silent' })

describe('steering delivery', () => {
  test('drain waits for a delivery started without waiting, until its fenced mark lands', async ({
    db,
    databaseUrl,
  }) => {
    const ownerId = `owner-${randomUUID().slice(0, 8)}`
    const attemptId = await accept(db, 'x')
    const claim = await claimAttempt(db, { attemptId, ownerId, leaseTtlMs: 10_000 })
    if (claim.kind !== 'claimed') throw new Error(claim.kind)
    const keeper = createLeaseKeeper({
      db,
      ownerId,
      leaseTtlMs: 10_000,
      heartbeatIntervalMs: 60_000,
      logger: quiet,
    })
    const execution = keeper.hold(attemptId, claim.attempt.ownerGeneration)
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
