// Shared by this app's integration tests: an in-process worker runtime on the test's database,
// Redis and prefix, and the steps the API would take around it (accept, enqueue, wait).
import { randomUUID } from 'node:crypto'
import { createLogger, type Logger } from '@baton/observability'
import { createAttemptQueue, enqueueAttempt } from '@baton/queue'
import { sql } from 'kysely'
import { acceptDelegations, claimAttempt, commitTerminal, type Db } from '@baton/store'
import {
  NO_START_CAPABILITIES,
  type SubagentProvider,
  type SubagentResult,
  type SubagentStartRequest,
} from '@baton/subagents'
import { historyTurn, servicesEnv, untilAttempt, type Closeable } from '@baton/testing'
import { loadConfig } from '../../src/config.ts'
import { createLeaseKeeper } from '../../src/lease/lease-keeper.ts'
import {
  createWorkerRuntime,
  type WorkerRuntime,
  type WorkerRuntimeOptions,
} from '../../src/runtime.ts'
import { builtInSubagents } from '../../src/subagents/subagent-catalog.ts'

const quiet = createLogger({ service: 'test', level: 'silent' })

/** The services of one test, as its fixtures give them. */
export interface WorkerTestContext {
  readonly databaseUrl: string
  readonly redisUrl: string
  readonly queuePrefix: string
  readonly track: <T extends Closeable>(resource: T) => T
}

/**
 * Starts a tracked worker runtime with short lease, heartbeat and reconcile intervals (`env`
 * overrides them) whose built-in `scripted` subagent is `provider` (undefined: the real scripted
 * child), logging to `options.logger` (default: nowhere).
 */
export function startRuntime(
  ctx: WorkerTestContext,
  provider: SubagentProvider | undefined,
  env: Record<string, string> = {},
  options: WorkerRuntimeOptions & { readonly logger?: Logger } = {},
): Promise<WorkerRuntime> {
  const config = loadConfig({
    ...servicesEnv(ctx),
    LEASE_TTL_MS: '2000',
    HEARTBEAT_INTERVAL_MS: '200',
    RECONCILE_INTERVAL_MS: '200',
    REQUEUE_AFTER_MS: '300',
    // Tests read `runtime.metrics` in process; one that scrapes over HTTP passes a port.
    METRICS_PORT: '0',
    ...env,
  })
  const { logger = quiet, ...runtimeOptions } = options
  const runtime = createWorkerRuntime(config, logger, builtInSubagents(provider), runtimeOptions)
  ctx.track({ close: () => runtime.shutdownChecked(5_000), isClosed: () => runtime.isStopped() })
  return runtime.start().then(() => runtime)
}

/**
 * A stand-in for the `scripted` subagent whose run ends with whatever `result` gives for the
 * start request (the child's behaviour, including ignoring its AbortSignal, is the test's).
 */
export function childProvider(
  result: (request: SubagentStartRequest) => Promise<SubagentResult>,
): SubagentProvider {
  return {
    name: 'scripted',
    capabilities: NO_START_CAPABILITIES,
    inheritsParentContext: false,
    start(request) {
      const ended = result(request)
      ended.catch(() => undefined)
      return Promise.resolve({
        id: randomUUID(),
        localAgent: undefined,
        result: ended,
        dispose: () =>
          ended.then(
            () => undefined,
            () => undefined,
          ),
      })
    },
  }
}

/** Accepts a new delegation to the `scripted` subagent, as the API would. */
export async function accept(db: Db, prompt: string): Promise<string> {
  const attemptId = randomUUID()
  await acceptDelegations(db, [
    {
      namespaceId: 'default',
      sessionId: 'worker-tests',
      name: 'scripted',
      prompt: [{ type: 'text', text: prompt }],
      metadata: {},
      attemptId,
      newAgentId: randomUUID(),
    },
  ])
  return attemptId
}

/**
 * An agent whose first attempt committed one turn of history (`historyTurn(0, 'first')`), and a
 * continuation of it accepted (not enqueued) with `prompt`.
 */
export async function acceptContinuation(
  db: Db,
  prompt: string,
): Promise<{ agentId: string; firstId: string; attemptId: string }> {
  const ownerId = `owner-${randomUUID().slice(0, 8)}`
  const firstId = randomUUID()
  const sessionId = `resume-${randomUUID().slice(0, 8)}`
  const [accepted] = await acceptDelegations(db, [
    {
      namespaceId: 'default',
      sessionId,
      name: 'scripted',
      prompt: [{ type: 'text', text: 'first' }],
      metadata: {},
      attemptId: firstId,
      newAgentId: randomUUID(),
    },
  ])
  if (accepted?.kind !== 'accepted') throw new Error(String(accepted?.kind))
  const claim = await claimAttempt(db, { attemptId: firstId, ownerId, leaseTtlMs: 10_000 })
  if (claim.kind !== 'claimed') throw new Error(claim.kind)
  const agentId = claim.attempt.agentId
  await commitTerminal(db, {
    attemptId: firstId,
    ownerId,
    ownerGeneration: claim.attempt.ownerGeneration,
    result: {
      stopReason: 'completed',
      output: 'one',
      failureCategory: null,
      history: { baseSeq: 0, events: historyTurn(0, 'first') },
    },
  })
  const attemptId = randomUUID()
  await acceptDelegations(db, [
    {
      namespaceId: 'default',
      sessionId,
      name: 'scripted',
      prompt: [{ type: 'text', text: prompt }],
      metadata: {},
      attemptId,
      newAgentId: randomUUID(),
      agentId,
    },
  ])
  return { agentId, firstId, attemptId }
}

/**
 * An attempt claimed by a fresh owner (lease 10 s), and that owner's lease keeper holding it; the
 * keeper's timer is not started.
 */
export async function heldAttempt(db: Db, options: { readonly heartbeatIntervalMs?: number } = {}) {
  const ownerId = `owner-${randomUUID().slice(0, 8)}`
  const attemptId = await accept(db, 'x')
  const claim = await claimAttempt(db, { attemptId, ownerId, leaseTtlMs: 10_000 })
  if (claim.kind !== 'claimed') throw new Error(claim.kind)
  const keeper = createLeaseKeeper({
    db,
    ownerId,
    leaseTtlMs: 10_000,
    heartbeatIntervalMs: options.heartbeatIntervalMs ?? 60_000,
    logger: quiet,
  })
  const ownerGeneration = claim.attempt.ownerGeneration
  const execution = keeper.hold(attemptId, ownerGeneration)
  return { ownerId, attemptId, ownerGeneration, keeper, execution }
}

/** Enqueues accepted attempts as the API would. */
export async function enqueue(
  ctx: { readonly redisUrl: string; readonly queuePrefix: string },
  ...attemptIds: string[]
): Promise<void> {
  const queue = createAttemptQueue({ connection: { url: ctx.redisUrl }, prefix: ctx.queuePrefix })
  try {
    await Promise.all(attemptIds.map((attemptId) => enqueueAttempt(queue, attemptId)))
  } finally {
    await queue.close()
  }
}

/** The attempt's view once it is terminal (fails the test after the default bound). */
export function untilTerminal(db: Db, attemptId: string) {
  return untilAttempt(db, attemptId, 'terminal')
}

/**
 * A fault on the Postgres side (no mock of the store): a trigger that makes updates of one
 * attempt raise `sqlstate` — `claim` matches the claim (accepted → running), `renewal` heartbeats
 * (running → running), `terminal` the terminal commit, optionally only one with `stopReason`,
 * `mark` the delivery marks of its steering messages. The first `times` matching updates fail
 * (every one when absent). `hits()` counts the matching updates seen so far.
 */
export async function injectUpdateFault(
  db: Db,
  fault: {
    readonly attemptId: string
    readonly on: 'claim' | 'renewal' | 'terminal' | 'mark'
    readonly sqlstate: string
    readonly stopReason?: string
    readonly times?: number
  },
): Promise<{ hits(): Promise<number>; remove(): Promise<void> }> {
  const name = `fault_${randomUUID().replaceAll('-', '')}`
  const [from, to] =
    fault.on === 'claim'
      ? ['accepted', 'running']
      : fault.on === 'renewal'
        ? ['running', 'running']
        : ['running', 'terminal']
  const stopReason =
    fault.stopReason === undefined ? '' : `and new.stop_reason = '${fault.stopReason}'`
  const [table, matches] =
    fault.on === 'mark'
      ? ['attempt_messages', `new.attempt_id = '${fault.attemptId}'`]
      : [
          'attempts',
          `new.id = '${fault.attemptId}' and old.status = '${from}' and new.status = '${to}' ${stopReason}`,
        ]
  const times = fault.times ?? 2_147_483_647
  // nextval is not rolled back with the failed statement, so it counts every matching update.
  await sql
    .raw(
      `create sequence ${name}_hits;
      create function ${name}() returns trigger language plpgsql as $$
      begin
        if ${matches} then
          if nextval('${name}_hits') <= ${times} then
            raise exception 'injected fault' using errcode = '${fault.sqlstate}';
          end if;
        end if;
        return new;
      end $$;
      create trigger ${name} before update on ${table} for each row execute function ${name}();`,
    )
    .execute(db)
  return {
    async hits() {
      const r = await sql<{ n: string }>`
        select case when is_called then last_value else 0 end as n from ${sql.table(`${name}_hits`)}
      `.execute(db)
      return Number(r.rows[0]?.n ?? 0)
    },
    async remove() {
      await sql.raw(`drop trigger ${name} on ${table}; drop function ${name}();`).execute(db)
    },
  }
}
