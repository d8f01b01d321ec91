import { Writable } from 'node:stream'
import { sql } from 'kysely'
import pg from 'pg'
import { Queue } from 'bullmq'
import { QueueName, type ApiBell, type AttemptSettlement } from '@baton/contracts'
import {
  createAttemptQueue,
  createSettlementListener,
  createWorkerCommandPublisher,
  enqueueAttempt,
} from '@baton/queue'
import { getAttempt, recordSteering, toAttemptView } from '@baton/store'
import { NO_START_CAPABILITIES, type SubagentProvider, type SubagentResult } from '@baton/subagents'
import {
  describe,
  eventually,
  expect,
  test,
  transitionEvents,
  untilAttempt,
  type Services,
} from '@baton/testing'
import { LEDGER_NOT_MAINTAINED_MESSAGE } from '../src/runtime.ts'
import { ShutdownCancelledError, ShutdownDeadlineError } from '../src/shutdown.ts'
import { createScriptedPromptProvider } from '@baton/agents'
import { createLogger } from '@baton/observability'
import { accept, enqueue, startRuntime, untilTerminal } from './support/worker-harness.ts'

/** Wraps the scripted provider to count executions and record whether the child saw an abort. */
function observedScripted() {
  const inner = createScriptedPromptProvider()
  const seen = { starts: 0, aborted: 0 }
  const provider: SubagentProvider = {
    ...inner,
    start(request) {
      seen.starts += 1
      request.signal.addEventListener('abort', () => (seen.aborted += 1), { once: true })
      return inner.start(request)
    },
  }
  return { provider, seen }
}

/** A runtime over the observed scripted child, running one hanging attempt once it started. */
async function runningHang(ctx: Services) {
  const { provider, seen } = observedScripted()
  const runtime = await startRuntime(ctx, provider)
  const attemptId = await accept(ctx.db, '{"hang":true}')
  await enqueue(ctx, attemptId)
  await eventually(async () => (seen.starts === 1 ? true : undefined))
  return { runtime, attemptId, seen }
}

describe('worker', () => {
  test('two workers receiving the same attempt twice: exactly one executes it', async ({
    services: ctx,
  }) => {
    const { provider, seen } = observedScripted()
    const a = await startRuntime(ctx, provider)
    const b = await startRuntime(ctx, provider)
    const attemptId = await accept(ctx.db, '{"output":"once","delayMs":200}')
    // At-least-once delivery: the same attempt arrives as two jobs at once.
    const queue = new Queue(QueueName.Attempts, {
      connection: { url: ctx.redisUrl },
      prefix: ctx.queuePrefix,
    })
    await queue.add('attempt', { attemptId }, { jobId: attemptId })
    await queue.add('attempt', { attemptId }, { jobId: `${attemptId}-redelivered` })
    const view = await untilTerminal(ctx.db, attemptId)
    await eventually(async () =>
      (await queue.getJobCounts('completed')).completed === 2 ? true : undefined,
    )
    await queue.close()
    expect(view).toMatchObject({ stopReason: 'completed', output: 'once' })
    expect(seen.starts).toBe(1)
    expect(await transitionEvents(ctx.db, attemptId)).toEqual(['accepted', 'claimed', 'committed'])
    await a.shutdownChecked(5_000)
    await b.shutdownChecked(5_000)
  })

  test("a child's settlement carries its terminal view as committed: the view a read answers", async ({
    services: ctx,
    redisUrl,
    queuePrefix,
  }) => {
    const heard: ApiBell[] = []
    const listener = createSettlementListener({
      redisUrl,
      prefix: queuePrefix,
      onEvent: (event) => heard.push(event),
      blockingTimeoutMs: 200,
    })
    await listener.ready()
    const worker = await startRuntime(ctx, createScriptedPromptProvider())
    try {
      const attemptId = await accept(ctx.db, '{"output":"carried"}')
      await enqueue(ctx, attemptId)
      const settled = await eventually(async () =>
        heard.find(
          (e): e is AttemptSettlement => e.eventName === 'settled' && e.attemptId === attemptId,
        ),
      )
      const record = await untilTerminal(ctx.db, attemptId)
      expect(settled.detail).toEqual({
        namespaceId: record.namespaceId,
        view: toAttemptView(record),
      })
      expect(settled.detail?.view).toMatchObject({ status: 'terminal', output: 'carried' })
    } finally {
      await listener.close()
      await worker.shutdownChecked(5_000)
    }
  })

  test('at start a worker warns, once per reason, when Postgres does not maintain the ledger', async ({
    services: ctx,
    db,
  }) => {
    const server = await sql<{ autovacuum: string }>`
      select current_setting('autovacuum') as autovacuum
    `.execute(db)
    const serverGaps =
      server.rows[0]?.autovacuum === 'on' ? [] : ['autovacuum is off on the Postgres server']
    const warnedGaps = async (): Promise<unknown[]> => {
      const lines: string[] = []
      const sink = new Writable({
        write(chunk: Buffer, _encoding, done) {
          lines.push(chunk.toString())
          done()
        },
      })
      const logger = createLogger({ service: 'test', level: 'warn', destination: sink })
      const runtime = await startRuntime(ctx, undefined, {}, { logger })
      await runtime.shutdownChecked(5_000)
      return lines
        .map((line) => JSON.parse(line) as { msg: string; gap?: string })
        .filter((entry) => entry.msg === LEDGER_NOT_MAINTAINED_MESSAGE)
        .map((entry) => entry.gap)
    }
    expect(await warnedGaps()).toEqual(serverGaps)
    await sql`alter table attempts set (autovacuum_enabled = false)`.execute(db)
    try {
      expect(await warnedGaps()).toEqual([
        ...serverGaps,
        'autovacuum is disabled on the attempts table (autovacuum_enabled=false)',
      ])
    } finally {
      await sql`alter table attempts reset (autovacuum_enabled)`.execute(db)
    }
  })

  test('heartbeat after lease expiry: the lease is lost, the child is aborted, the stale owner writes nothing', async ({
    services: ctx,
  }) => {
    const { provider, seen } = observedScripted()
    // Reconciler effectively off here, so nothing but the stale owner could write.
    const runtime = await startRuntime(ctx, provider, { RECONCILE_INTERVAL_MS: '600000' })
    const attemptId = await accept(ctx.db, '{"hang":true}')
    await enqueue(ctx, attemptId)
    await untilAttempt(ctx.db, attemptId, 'running')
    // The owner stalls past its lease: on the database clock, its lease is now over.
    await sql`update attempts set lease_expires_at = now() - interval '1 second' where id = ${attemptId}`.execute(
      ctx.db,
    )
    await eventually(async () => (seen.aborted === 1 ? true : undefined), {
      what: 'the child to see its abort',
    })
    // Give the stale owner every chance to write, then check it wrote nothing.
    await new Promise((r) => setTimeout(r, 500))
    expect((await getAttempt(ctx.db, attemptId))?.status).toBe('running')
    expect(await transitionEvents(ctx.db, attemptId)).toEqual(['accepted', 'claimed'])
    // The reconciler (any worker) then records the process loss exactly once.
    expect(await runtime.reconciler.runOnce()).toMatchObject({ processLost: 1 })
    expect(await getAttempt(ctx.db, attemptId)).toMatchObject({
      status: 'terminal',
      failureCategory: 'process_lost',
    })
    expect(await transitionEvents(ctx.db, attemptId)).toEqual([
      'accepted',
      'claimed',
      'process_lost',
    ])
    await runtime.shutdownChecked(5_000)
  })

  test('Redis flushed after accept: the reconciler re-enqueues and the attempt completes', async ({
    services: ctx,
  }) => {
    const { provider } = observedScripted()
    const attemptId = await accept(ctx.db, '{"output":"survived"}')
    const queue = createAttemptQueue({ connection: { url: ctx.redisUrl }, prefix: ctx.queuePrefix })
    await enqueueAttempt(queue, attemptId)
    // Flush everything under this test's prefix: the job is gone, the ledger still says accepted.
    const client = ctx.redis()
    const keys = await client.keys(`${ctx.queuePrefix}:*`)
    if (keys.length > 0) await client.del(...keys)
    expect(await queue.getJobState(attemptId)).toBe('unknown')
    await queue.close()
    await client.quit()
    const runtime = await startRuntime(ctx, provider)
    const view = await untilTerminal(ctx.db, attemptId)
    expect(view).toMatchObject({ stopReason: 'completed', output: 'survived' })
    await runtime.shutdownChecked(5_000)
  })

  test('shutdown aborts running children and commits their aborted outcome', async ({
    services: ctx,
  }) => {
    const { runtime, attemptId, seen } = await runningHang(ctx)
    await runtime.shutdownChecked(5_000)
    expect(seen.aborted).toBe(1)
    expect(await getAttempt(ctx.db, attemptId)).toMatchObject({
      status: 'terminal',
      stopReason: 'aborted',
      failureCategory: 'shutdown',
    })
  })

  test('steering recorded without an event is delivered by the heartbeat, once each and in order', async ({
    services: ctx,
  }) => {
    const runtime = await startRuntime(ctx, createScriptedPromptProvider())
    const attemptId = await accept(ctx.db, '{"awaitSteering":3}')
    await enqueue(ctx, attemptId)
    await untilAttempt(ctx.db, attemptId, 'running')
    // Recorded in the ledger only: no steer event is published, so only heartbeats can find them.
    for (const text of ['one', 'two', 'three']) {
      await recordSteering(ctx.db, { attemptId, content: [{ type: 'text', text }] })
    }
    const view = await untilTerminal(ctx.db, attemptId)
    expect(view).toMatchObject({ stopReason: 'completed', output: 'one\ntwo\nthree' })
    const undelivered = await sql<{ n: number }>`
      select count(*)::int as n from attempt_messages where attempt_id = ${attemptId} and delivered_at is null
    `.execute(ctx.db)
    expect(undelivered.rows[0]?.n).toBe(0)
    await runtime.shutdownChecked(5_000)
  })

  test('steering without heartbeats: an unsteered attempt reads no messages; messages recorded before the claim or before the run is attached reach it once, in order', async ({
    services: ctx,
  }) => {
    const inner = createScriptedPromptProvider()
    const publisher = createWorkerCommandPublisher({
      redisUrl: ctx.redisUrl,
      prefix: ctx.queuePrefix,
    })
    // The next child to start records a message for this attempt and rings its bell, then lets
    // the event arrive before its run exists: the bell rings between the claim and the attach.
    let steerOnStart: string | undefined
    const lateSteer: SubagentProvider = {
      ...inner,
      async start(request) {
        const attemptId = steerOnStart
        steerOnStart = undefined
        if (attemptId !== undefined) {
          await recordSteering(ctx.db, { attemptId, content: [{ type: 'text', text: 'late' }] })
          await publisher.publish({ eventName: 'steer', attemptId })
          await new Promise((r) => setTimeout(r, 300))
        }
        return inner.start(request)
      },
    }
    let steeringReads = 0
    // Heartbeats a minute apart: only the claim's answer and the steer bell can deliver.
    const runtime = await startRuntime(
      ctx,
      lateSteer,
      { HEARTBEAT_INTERVAL_MS: '60000', LEASE_TTL_MS: '120000' },
      {
        // The terminal commit reads its attempt back, steering progress included; that subquery
        // runs only for an attempt with steering recorded, like every read's.
        onQuery: (text) => {
          if (/from attempt_messages/.test(text) && !/^\s*update|'committed'/.test(text)) {
            steeringReads += 1
          }
        },
      },
    )
    try {
      const plain = await accept(ctx.db, '{"output":"plain"}')
      await enqueue(ctx, plain)
      expect(await untilTerminal(ctx.db, plain)).toMatchObject({ output: 'plain' })
      expect(steeringReads).toBe(0)

      const early = await accept(ctx.db, '{"awaitSteering":2}')
      for (const text of ['one', 'two']) {
        await recordSteering(ctx.db, { attemptId: early, content: [{ type: 'text', text }] })
      }
      await enqueue(ctx, early)
      expect(await untilTerminal(ctx.db, early)).toMatchObject({
        stopReason: 'completed',
        output: 'one\ntwo',
      })

      const late = await accept(ctx.db, '{"awaitSteering":1}')
      steerOnStart = late
      await enqueue(ctx, late)
      expect(await untilTerminal(ctx.db, late)).toMatchObject({
        stopReason: 'completed',
        output: 'late',
      })
      const undelivered = await sql<{ n: number }>`
        select count(*)::int as n from attempt_messages
        where attempt_id = any(${[early, late]}::uuid[]) and delivered_at is null
      `.execute(ctx.db)
      expect(undelivered.rows[0]?.n).toBe(0)
    } finally {
      await publisher.close()
      await runtime.shutdownChecked(5_000)
    }
  })

  test('the message that lets a child end is marked delivered before its terminal commit', async ({
    services: ctx,
    databaseUrl,
    redisUrl,
    queuePrefix,
  }) => {
    const publisher = createWorkerCommandPublisher({ redisUrl, prefix: queuePrefix })
    // Heartbeats a minute apart: only the steer event delivers.
    const runtime = await startRuntime(ctx, createScriptedPromptProvider(), {
      HEARTBEAT_INTERVAL_MS: '60000',
      LEASE_TTL_MS: '120000',
    })
    const blocker = new pg.Client({ connectionString: databaseUrl })
    await blocker.connect()
    try {
      const attemptId = await accept(ctx.db, '{"awaitSteering":1}')
      await enqueue(ctx, attemptId)
      await untilAttempt(ctx.db, attemptId, 'running')
      await recordSteering(ctx.db, { attemptId, content: [{ type: 'text', text: 'last' }] })
      // Another session holds the message row, so the delivery's mark waits for it.
      await blocker.query('begin')
      await blocker.query('select 1 from attempt_messages where attempt_id = $1 for update', [
        attemptId,
      ])
      await publisher.publish({ eventName: 'steer', attemptId })
      // The child has the message (its mark is waiting) and has ended; the commit must wait too.
      await eventually(async () => {
        // Asked outside the blocker's transaction, whose view of the activity stays as it was.
        const waiting = await sql`
          select 1 from pg_stat_activity
          where query like '%update attempt_messages m set delivered_at%'
            and wait_event_type = 'Lock'
        `.execute(ctx.db)
        return waiting.rows.length === 1 ? true : undefined
      })
      await new Promise((r) => setTimeout(r, 300))
      expect((await getAttempt(ctx.db, attemptId))?.status).toBe('running')
      await blocker.query('rollback')
      expect(await untilTerminal(ctx.db, attemptId)).toMatchObject({
        stopReason: 'completed',
        output: 'last',
        steering: { accepted: 1, delivered: 1 },
      })
    } finally {
      await blocker.end()
      await publisher.close()
      await runtime.shutdownChecked(5_000)
    }
  })

  test('a redelivered job of a running attempt, acknowledged as held on the same worker, leaves the run steerable', async ({
    services: ctx,
  }) => {
    // Heartbeats a minute apart: only the steer event can deliver.
    const runtime = await startRuntime(ctx, createScriptedPromptProvider(), {
      HEARTBEAT_INTERVAL_MS: '60000',
      LEASE_TTL_MS: '120000',
    })
    const queue = new Queue(QueueName.Attempts, {
      connection: { url: ctx.redisUrl },
      prefix: ctx.queuePrefix,
    })
    const publisher = createWorkerCommandPublisher({
      redisUrl: ctx.redisUrl,
      prefix: ctx.queuePrefix,
    })
    try {
      const attemptId = await accept(ctx.db, '{"awaitSteering":1}')
      await queue.add('attempt', { attemptId }, { jobId: attemptId })
      await untilAttempt(ctx.db, attemptId, 'running')
      const redelivered = `${attemptId}-redelivered`
      await queue.add('attempt', { attemptId }, { jobId: redelivered })
      await eventually(async () =>
        (await queue.getJobState(redelivered)) === 'completed' ? true : undefined,
      )
      await recordSteering(ctx.db, { attemptId, content: [{ type: 'text', text: 'still here' }] })
      await publisher.publish({ eventName: 'steer', attemptId })
      expect(await untilTerminal(ctx.db, attemptId)).toMatchObject({
        stopReason: 'completed',
        output: 'still here',
      })
    } finally {
      await publisher.close()
      await queue.close()
      await runtime.shutdownChecked(5_000)
    }
  })

  test('checked shutdown past its deadline or cancelled by its caller keeps ownership; a later call finishes the drain', async ({
    services: ctx,
  }) => {
    // A child that takes 800 ms to honour its abort (a slow cooperative cancel).
    const stubborn: SubagentProvider = {
      name: 'scripted',
      capabilities: NO_START_CAPABILITIES,
      inheritsParentContext: false,
      start(request) {
        const result = new Promise<SubagentResult>((resolve) => {
          request.signal.addEventListener(
            'abort',
            () =>
              setTimeout(
                () =>
                  resolve({ output: [{ type: 'text', text: 'partial' }], stopReason: 'aborted' }),
                800,
              ),
            { once: true },
          )
        })
        return Promise.resolve({
          id: 'stubborn',
          localAgent: undefined,
          result,
          dispose: () => result.then(() => undefined),
        })
      },
    }
    const runtime = await startRuntime(ctx, stubborn)
    const attemptId = await accept(ctx.db, 'anything')
    await enqueue(ctx, attemptId)
    await untilAttempt(ctx.db, attemptId, 'running')
    const first = await runtime.shutdownChecked(100).then(
      () => 'resolved',
      (error: unknown) => error,
    )
    expect(first).toBeInstanceOf(ShutdownDeadlineError)
    expect(runtime.isStopped()).toBe(false)
    // A call cancelled by its caller also keeps everything for the next call.
    const cancel = new AbortController()
    const interrupted = runtime.shutdownChecked(5_000, cancel.signal).then(
      () => 'resolved',
      (error: unknown) => error,
    )
    cancel.abort()
    expect(await interrupted).toBeInstanceOf(ShutdownCancelledError)
    expect(runtime.isStopped()).toBe(false)
    const lease = await sql<{ live: boolean; status: string }>`
      select lease_expires_at > now() as live, status from attempts where id = ${attemptId}
    `.execute(ctx.db)
    expect(lease.rows[0]).toEqual({ live: true, status: 'running' })
    // Two concurrent calls are serialised; both end once the drain completes.
    await Promise.all([runtime.shutdownChecked(5_000), runtime.shutdownChecked(5_000)])
    expect(runtime.isStopped()).toBe(true)
    expect(await getAttempt(ctx.db, attemptId)).toMatchObject({
      status: 'terminal',
      stopReason: 'aborted',
      failureCategory: 'shutdown',
      output: 'partial',
    })
  })

  test('a provider that throws becomes failed terminal evidence with a safe category, no message', async ({
    services: ctx,
  }) => {
    let calls = 0
    const broken: SubagentProvider = {
      name: 'scripted',
      capabilities: NO_START_CAPABILITIES,
      inheritsParentContext: false,
      start() {
        calls += 1
        if (calls === 1) return Promise.reject(new Error('boom at /srv/secret-token-123'))
        const result = Promise.reject(
          new TypeError('undefined is not a function (secret-token-456)'),
        )
        result.catch(() => undefined)
        return Promise.resolve({
          id: 'broken',
          localAgent: undefined,
          result,
          dispose: () => Promise.resolve(),
        })
      },
    }
    const runtime = await startRuntime(ctx, broken)
    const queue = createAttemptQueue({ connection: { url: ctx.redisUrl }, prefix: ctx.queuePrefix })
    const ids = [await accept(ctx.db, 'a'), await accept(ctx.db, 'b')]
    for (const id of ids) await enqueueAttempt(queue, id)
    await queue.close()
    for (const id of ids) {
      const view = await untilTerminal(ctx.db, id)
      expect(view).toMatchObject({
        stopReason: 'error',
        failureCategory: 'provider_fault',
        output: '',
      })
    }
    const leaked = await sql<{ n: number }>`
      select count(*)::int as n from attempts where row_to_json(attempts)::text like '%secret-token%'
    `.execute(ctx.db)
    expect(leaked.rows[0]?.n).toBe(0)
    await runtime.shutdownChecked(5_000)
  })

  test('a heartbeat stuck on a slow store starves neither cancellation nor the commit', async ({
    services: ctx,
  }) => {
    const { runtime, attemptId, seen } = await runningHang(ctx)
    // Another session holds the attempt's row lock: the next heartbeat statement blocks on it.
    const blocker = new pg.Client({ connectionString: ctx.databaseUrl })
    await blocker.connect()
    try {
      await blocker.query('begin')
      await blocker.query('select id from attempts where id = $1 for update', [attemptId])
      await new Promise((r) => setTimeout(r, 400)) // at least one heartbeat is now stuck
      // Cancellation arrives by event and reaches the child while the heartbeat is stuck.
      const publisher = createWorkerCommandPublisher({
        redisUrl: ctx.redisUrl,
        prefix: ctx.queuePrefix,
      })
      const started = performance.now()
      await publisher.publish({ eventName: 'cancel', attemptId })
      await publisher.close()
      await eventually(async () => (seen.aborted === 1 ? true : undefined), { timeoutMs: 2_000 })
      expect(performance.now() - started).toBeLessThan(1_000)
    } finally {
      await blocker.query('rollback')
      await blocker.end()
    }
    // With the store responsive again the commit lands.
    const view = await untilTerminal(ctx.db, attemptId)
    expect(view).toMatchObject({ stopReason: 'aborted' })
    await runtime.shutdownChecked(5_000)
  })
})
