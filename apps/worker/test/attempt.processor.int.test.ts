import { randomUUID } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import { Worker, type Job } from 'bullmq'
import { sql } from 'kysely'
import { QueueName, type AttemptJob } from '@baton/contracts'
import { createLogger } from '@baton/observability'
import {
  createAttemptQueue,
  createSettlementListener,
  createSettlementPublisher,
  enqueueAttempt,
} from '@baton/queue'
import {
  acceptDelegations,
  claimAttempt,
  commitTerminalsReturning,
  getAgentHistory,
  getAttempt,
  setNamespaceLimits,
  type CommitTerminalInput,
  type CommitTerminalOutcome,
  type CommittedTerminal,
  type Db,
} from '@baton/store'
import {
  NO_START_CAPABILITIES,
  type SubagentHistoryEvent,
  type SubagentProvider,
} from '@baton/subagents'
import {
  describe,
  eventually,
  expect,
  hasRedisServerBinary,
  historyTurn,
  startRedisServer,
  test,
  untilAttempt,
} from '@baton/testing'
import { duplicateTerminalAttempts } from '@baton/testing/ledger-audit'
import { createOutputBudget } from '../src/output-budget.ts'
import { createLeaseKeeper } from '../src/lease/lease-keeper.ts'
import { createSteeringDelivery } from '../src/steering/steering-delivery.ts'
import { builtInSubagents, type WorkerSubagents } from '../src/subagents/subagent-catalog.ts'
import { accept, acceptContinuation } from './support/worker-harness.ts'
import { createAttemptProcessor } from '../src/processors/attempt.processor.ts'

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
    await acceptDelegations(db, [
      {
        namespaceId: 'default',
        sessionId: 'lost-response',
        name: 'scripted',
        prompt: [{ type: 'text', text: '{"output":"exactly once"}' }],
        metadata: {},
        attemptId,
        newAgentId: randomUUID(),
      },
    ])
    const outcomes: (CommitTerminalOutcome | 'response lost')[] = []
    let dropped = false
    // The first commit reaches the ledger, then its response is lost on the way back.
    const commit = async (input: CommitTerminalInput): Promise<CommittedTerminal> => {
      const [answer] = await commitTerminalsReturning(db, [input])
      if (answer === undefined) throw new Error('no answer')
      if (!dropped) {
        dropped = true
        outcomes.push('response lost')
        throw connectionLost()
      }
      outcomes.push(answer.outcome)
      return answer
    }
    const harness = startProcessor(
      { db, redisUrl, queuePrefix },
      ownerId,
      builtInSubagents(),
      commit,
    )
    try {
      await enqueueAttempt(harness.queue, attemptId)
      const view = await untilAttempt(db, attemptId, 'terminal')
      expect(view).toMatchObject({ stopReason: 'completed', output: 'exactly once' })
      await eventually(async () => (outcomes.length === 2 ? true : undefined))
      expect(outcomes).toEqual(['response lost', 'replayed'])
      // Terminal once: the replay decided nothing a second time.
      expect(await duplicateTerminalAttempts(db)).toEqual([])
    } finally {
      await harness.close()
    }
  })
})

describe('attempt processor: the settlement bell', () => {
  // The bell's Redis must stop answering without stopping the queue's, so it is a private one.
  test.skipIf(!hasRedisServerBinary())(
    'a bell that Redis does not answer yet does not hold the job back, and rings once Redis answers',
    { timeout: 60_000 },
    async ({ db, queuePrefix, track }) => {
      const bellRedis = track(await startRedisServer())
      const heard: string[] = []
      const listener = createSettlementListener({
        redisUrl: bellRedis.url,
        prefix: queuePrefix,
        onEvent: (event) => heard.push(event.attemptId),
        blockingTimeoutMs: 200,
      })
      const publisher = createSettlementPublisher({ redisUrl: bellRedis.url, prefix: queuePrefix })
      const ownerId = `owner-${randomUUID().slice(0, 8)}`
      const attemptId = await accept(db, '{"output":"done"}')
      const deps = processorDeps(db, ownerId, builtInSubagents())
      const processor = createAttemptProcessor({ ...deps, publisher })
      try {
        await listener.ready()
        // The publisher's connection is open before Redis stops, as a worker's always is.
        await publisher.publish({ eventName: 'settled', attemptId: randomUUID() })
        bellRedis.pause()
        const job = { id: attemptId, data: { attemptId } } as Job<AttemptJob>
        const processed = processor(job).then(() => 'processed' as const)
        const outcome = await Promise.race([
          processed,
          sleep(5_000).then(() => 'held back by the bell' as const),
        ])
        expect(outcome).toBe('processed')
        expect(await getAttempt(db, attemptId)).toMatchObject({
          status: 'terminal',
          stopReason: 'completed',
        })
        expect(heard).not.toContain(attemptId)
        bellRedis.resume()
        await expect.poll(() => heard, { timeout: 10_000 }).toContain(attemptId)
      } finally {
        bellRedis.resume()
        await publisher.close()
        await listener.close()
        await deps.leaseKeeper.stop()
        await bellRedis.close()
      }
    },
  )
})

/**
 * A provider that can resume from history and reports a log: the history it was given (or a
 * tampered copy) followed by one new turn. It records the history each start received, and runs
 * `onStart` before the run is ready.
 */
function historyProvider(tamper: boolean, onStart: () => Promise<void>) {
  const received: (readonly SubagentHistoryEvent[] | undefined)[] = []
  const provider: SubagentProvider = {
    name: 'history-fake',
    capabilities: { ...NO_START_CAPABILITIES, history: true },
    inheritsParentContext: false,
    async start(request) {
      received.push(request.history)
      await onStart()
      const resumed = request.history ?? []
      const prefix = tamper
        ? resumed.map((e, i) =>
            i === 1 ? { ...e, message: { role: 'user', content: 'forged' } } : e,
          )
        : resumed
      const log = [...prefix, ...historyTurn(resumed.length, 'new work')]
      return {
        id: randomUUID(),
        localAgent: undefined,
        result: Promise.resolve({
          output: [{ type: 'text', text: 'ok' }],
          stopReason: 'completed',
        }),
        dispose: () => Promise.resolve(),
        history: () => log,
      }
    },
  }
  return { provider, received }
}

describe('attempt processor: context deltas', () => {
  test.for([
    { fault: 'none', expected: 'appends only the new suffix' },
    { fault: 'tamper', expected: 'fails closed when the log rewrites the resumed history' },
    { fault: 'moved', expected: 'fails closed when the history moved on while it ran' },
    {
      fault: 'limit',
      expected: "keeps its result but appends nothing past its namespace's history limit",
    },
  ] as const)('a resumed child $expected', async ({ fault }, { db, redisUrl, queuePrefix }) => {
    // The agent's first attempt committed one turn of history; the continuation runs through
    // the processor.
    const { agentId, firstId, attemptId } = await acceptContinuation(db, 'second')
    const ownerId = `owner-${randomUUID().slice(0, 8)}`
    // The `moved` fault: an event lands in the agent's history while the continuation runs (no
    // Baton writer does this; the ledger's base check is the guard if one ever did).
    const fake = historyProvider(fault === 'tamper', async () => {
      if (fault !== 'moved') return
      await sql`
        insert into agent_context_events (agent_id, session_id, seq, attempt_id, event)
        select ${agentId}, session_id, 3, ${firstId}, '{"seq":3,"type":"turn/start","turnId":"x"}'::jsonb
        from agents where id = ${agentId}
      `.execute(db)
    })
    // The `limit` fault: the namespace's history limit leaves room for the first turn only.
    const limit = (agentHistoryMaxBytes: number | null) =>
      setNamespaceLimits(db, 'default', {
        artifactQuotaBytes: null,
        artifactMaxBytes: null,
        agentHistoryMaxBytes,
      })
    if (fault === 'limit') await limit(300)
    const harness = startProcessor(
      { db, redisUrl, queuePrefix },
      ownerId,
      builtInSubagents(fake.provider),
    )
    try {
      await enqueueAttempt(harness.queue, attemptId)
      const view = await untilAttempt(db, attemptId, 'terminal')
      expect(fake.received).toEqual([historyTurn(0, 'first')])
      const history = (await getAgentHistory(db, agentId))?.events ?? []
      if (fault === 'limit') {
        expect(view).toMatchObject({
          stopReason: 'error',
          failureCategory: 'history_limit_exceeded',
          output: 'ok',
          context: null,
        })
        expect(history.every((e) => e.attemptId === firstId)).toBe(true)
        expect(history).toHaveLength(3)
      } else if (fault !== 'none') {
        expect(view).toMatchObject({
          stopReason: 'error',
          failureCategory: 'context_rejected',
          context: null,
        })
        // Nothing of the continuation was appended.
        expect(history.every((e) => e.attemptId === firstId)).toBe(true)
        expect(history).toHaveLength(fault === 'moved' ? 4 : 3)
      } else {
        expect(view).toMatchObject({
          stopReason: 'completed',
          context: { baseSeq: 3, eventCount: 3 },
        })
        expect(history.map((e) => e.event)).toEqual([
          ...historyTurn(0, 'first'),
          ...historyTurn(3, 'new work'),
        ])
        expect(history.slice(3).every((e) => e.attemptId === attemptId)).toBe(true)
      }
    } finally {
      await harness.close()
      if (fault === 'limit') await limit(null)
    }
  })
})

/**
 * The processor under a BullMQ worker, with the real claim against the ledger and the real commit
 * unless `commit` stands in for it (to inject a fault).
 */
function startProcessor(
  { db, redisUrl, queuePrefix }: { db: Db; redisUrl: string; queuePrefix: string },
  ownerId: string,
  subagents: WorkerSubagents,
  commit?: (input: CommitTerminalInput) => Promise<CommittedTerminal>,
) {
  const publisher = createSettlementPublisher({
    redisUrl: redisUrl,
    prefix: queuePrefix,
  })
  const deps = processorDeps(db, ownerId, subagents, commit)
  const processor = createAttemptProcessor({ ...deps, publisher })
  const worker = new Worker<AttemptJob>(QueueName.Attempts, processor, {
    connection: { url: redisUrl },
    prefix: queuePrefix,
  })
  const queue = createAttemptQueue({ connection: { url: redisUrl }, prefix: queuePrefix })
  return {
    queue,
    async close() {
      await worker.close()
      await queue.close()
      await publisher.close()
      await deps.leaseKeeper.stop()
    },
  }
}

/**
 * What the processor needs but its publisher: the real claim against the ledger, and the real
 * commit unless `commit` stands in for it (to inject a fault). The caller stops the lease keeper.
 */
function processorDeps(
  db: Db,
  ownerId: string,
  subagents: WorkerSubagents,
  commit: (input: CommitTerminalInput) => Promise<CommittedTerminal> = async (input) => {
    const [answer] = await commitTerminalsReturning(db, [input])
    if (answer === undefined) throw new Error('no answer')
    return answer
  },
) {
  return {
    db,
    ownerId,
    claim: (id: string) => claimAttempt(db, { attemptId: id, ownerId, leaseTtlMs: 10_000 }),
    commit,
    heartbeatIntervalMs: 200,
    outputBudget: createOutputBudget(64 * 1024 * 1024),
    workspaceDir: process.cwd(),
    leaseKeeper: createLeaseKeeper({
      db,
      ownerId,
      leaseTtlMs: 10_000,
      heartbeatIntervalMs: 1_000,
      logger: quiet,
    }),
    subagents,
    steering: createSteeringDelivery({ db, ownerId, logger: quiet }),
    logger: quiet,
  }
}
