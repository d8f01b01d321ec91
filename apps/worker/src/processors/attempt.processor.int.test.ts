import { randomUUID } from 'node:crypto'
import { Worker } from 'bullmq'
import { sql } from 'kysely'
import { QueueName, type AttemptJob } from '@baton/contracts'
import { createLogger } from '@baton/observability'
import { createAttemptQueue, createControlPublisher, enqueueAttempt } from '@baton/queue'
import {
  acceptDelegation,
  claimAttempt,
  commitTerminal,
  getAttempt,
  type CommitTerminalInput,
  type CommitTerminalOutcome,
} from '@baton/store'
import { describe, eventually, expect, test } from '@baton/testing'
import { createLeaseKeeper } from '../lease/lease-keeper.ts'
import { createSteeringDelivery } from '../steering/steering-delivery.ts'
import { builtInSubagents } from '../subagents/subagent-catalog.ts'
import { createAttemptProcessor } from './attempt.processor.ts'

const quiet = createLogger({ service: 'test', level: 'silent' })

/** A Postgres connection failure as node-postgres reports it. */
function connectionLost(): Error {
  return Object.assign(new Error('Connection terminated unexpectedly'), { code: '08006' })
}

describe('attempt processor', () => {
  test('a commit applied whose response was lost is recovered by exact replay', async ({
    db,
    redisUrl,
    queuePrefix,
  }) => {
    const ownerId = `owner-${randomUUID().slice(0, 8)}`
    const attemptId = randomUUID()
    await acceptDelegation(db, {
      sessionId: 'lost-response',
      name: 'scripted',
      prompt: [{ type: 'text', text: '{"output":"exactly once"}' }],
      metadata: {},
      attemptId,
      newAgentId: randomUUID(),
    })
    const outcomes: (CommitTerminalOutcome | 'response lost')[] = []
    let dropped = false
    // The first commit reaches the ledger, then its response is lost on the way back.
    const commit = async (input: CommitTerminalInput): Promise<CommitTerminalOutcome> => {
      const outcome = await commitTerminal(db, input)
      if (!dropped) {
        dropped = true
        outcomes.push('response lost')
        throw connectionLost()
      }
      outcomes.push(outcome)
      return outcome
    }
    const publisher = createControlPublisher({ connection: { url: redisUrl }, prefix: queuePrefix })
    const leaseKeeper = createLeaseKeeper({
      db,
      ownerId,
      leaseTtlMs: 10_000,
      heartbeatIntervalMs: 1_000,
      logger: quiet,
    })
    const processor = createAttemptProcessor({
      db,
      ownerId,
      claim: (id) => claimAttempt(db, { attemptId: id, ownerId, leaseTtlMs: 10_000 }),
      commit,
      heartbeatIntervalMs: 200,
      workspaceDir: process.cwd(),
      leaseKeeper,
      subagents: builtInSubagents(),
      steering: createSteeringDelivery({ db, ownerId, logger: quiet }),
      publisher,
      logger: quiet,
    })
    const worker = new Worker<AttemptJob>(QueueName.Attempts, processor, {
      connection: { url: redisUrl },
      prefix: queuePrefix,
    })
    const queue = createAttemptQueue({ connection: { url: redisUrl }, prefix: queuePrefix })
    try {
      await enqueueAttempt(queue, attemptId)
      const view = await eventually(async () => {
        const v = await getAttempt(db, attemptId)
        return v?.status === 'terminal' ? v : undefined
      })
      expect(view).toMatchObject({ stopReason: 'completed', output: 'exactly once' })
      await eventually(async () => (outcomes.length === 2 ? true : undefined))
      expect(outcomes).toEqual(['response lost', 'replayed'])
      const committed = await sql<{ n: number }>`
        select count(*)::int as n from attempt_transitions where attempt_id = ${attemptId} and to_status = 'terminal'
      `.execute(db)
      expect(committed.rows[0]?.n).toBe(1)
    } finally {
      await worker.close()
      await queue.close()
      await publisher.close()
      await leaseKeeper.stop()
    }
  })
})
