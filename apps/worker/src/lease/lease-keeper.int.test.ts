import { randomUUID } from 'node:crypto'
import { createLogger } from '@baton/observability'
import { acceptDelegations, claimAttempt, commitTerminal, type Db } from '@baton/store'
import { describe, expect, test } from '@baton/testing'
import { createLeaseKeeper } from './lease-keeper.ts'

const quiet = createLogger({ service: 'test', level: 'silent' })
const done = { stopReason: 'completed', output: 'done', failureCategory: null }

/** An attempt claimed by `ownerId`, and a keeper of that owner holding its lease. */
async function heldAttempt(db: Db) {
  const ownerId = `owner-${randomUUID().slice(0, 8)}`
  const attemptId = randomUUID()
  await acceptDelegations(db, [
    {
      sessionId: 'lease-keeper',
      name: 'scripted',
      prompt: [{ type: 'text', text: 'x' }],
      metadata: {},
      attemptId,
      newAgentId: randomUUID(),
    },
  ])
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
  const commit = () =>
    commitTerminal(db, {
      attemptId,
      ownerId,
      ownerGeneration: claim.attempt.ownerGeneration,
      result: done,
    })
  return { keeper, execution, commit }
}

describe('lease keeper', () => {
  test('a renewal that finds the attempt gone marks the lease lost and aborts the child', async ({
    db,
  }) => {
    const { keeper, execution, commit } = await heldAttempt(db)
    // Something else ended the attempt while this worker was not committing.
    expect(await commit()).toBe('committed')
    await keeper.beat()
    expect(execution.lost).toBe(true)
    expect(execution.signal.aborted).toBe(true)
    await keeper.stop()
  })

  test('a renewal racing the own commit (applied, answer still in flight) is not taken as loss', async ({
    db,
  }) => {
    const { keeper, execution, commit } = await heldAttempt(db)
    execution.beginCommit()
    // The commit has landed in the ledger; its answer has not reached the processor yet.
    expect(await commit()).toBe('committed')
    await keeper.beat()
    expect(execution.lost).toBe(false)
    expect(execution.signal.aborted).toBe(false)
    // The commit's own retry is what confirms the outcome.
    expect(await commit()).toBe('replayed')
    await keeper.stop()
  })
})
