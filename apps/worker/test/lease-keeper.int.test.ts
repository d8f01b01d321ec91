import { commitTerminal, type Db } from '@baton/store'
import { describe, expect, test } from '@baton/testing'
import { bytesSurvivingScavenges } from '@baton/testing/young-generation'
import { heldAttempt } from './support/worker-harness.ts'

const done = { stopReason: 'completed', output: 'done', failureCategory: null }

/** A held attempt, and the commit its owner would make. */
async function heldAttemptWithCommit(db: Db) {
  const { ownerId, attemptId, ownerGeneration, keeper, execution } = await heldAttempt(db)
  const commit = () => commitTerminal(db, { attemptId, ownerId, ownerGeneration, result: done })
  return { keeper, execution, commit }
}

describe('lease keeper', () => {
  test('a renewal that finds the attempt gone marks the lease lost and aborts the child', async ({
    db,
  }) => {
    const { keeper, execution, commit } = await heldAttemptWithCommit(db)
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
    const { keeper, execution, commit } = await heldAttemptWithCommit(db)
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

  test('an execution it held and released dies young', async ({ db }) => {
    const { keeper } = await heldAttempt(db)
    let n = 0
    const survived = await bytesSurvivingScavenges(() => {
      const attemptId = `young-${n++ % 16}`
      const execution = keeper.hold(attemptId, 1)
      execution.beginCommit()
      keeper.release(attemptId)
    })
    // Held as an object literal with getters, each execution (its abort controller, its promise)
    // outlived the scavenges.
    expect(survived).toBeLessThan(150)
    await keeper.stop()
  })
})
