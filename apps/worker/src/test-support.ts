// Shared by this app's integration tests: an in-process worker runtime on the test's database,
// Redis and prefix, and the steps the API would take around it (accept, enqueue, wait).
import { randomUUID } from 'node:crypto'
import { createLogger } from '@baton/observability'
import { createAttemptQueue, enqueueAttempt } from '@baton/queue'
import { acceptDelegations, getAttempt, type Db } from '@baton/store'
import type { SubagentProvider } from '@baton/subagents'
import { eventually, type Closeable } from '@baton/testing'
import { loadConfig } from './config.ts'
import { createWorkerRuntime, type WorkerRuntime, type WorkerRuntimeOptions } from './runtime.ts'
import { builtInSubagents } from './subagents/subagent-catalog.ts'

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
 * overrides them) whose built-in `scripted` subagent is `provider`.
 */
export function startRuntime(
  ctx: WorkerTestContext,
  provider: SubagentProvider,
  env: Record<string, string> = {},
  options: WorkerRuntimeOptions = {},
): Promise<WorkerRuntime> {
  const config = loadConfig({
    DATABASE_URL: ctx.databaseUrl,
    REDIS_URL: ctx.redisUrl,
    QUEUE_PREFIX: ctx.queuePrefix,
    LEASE_TTL_MS: '2000',
    HEARTBEAT_INTERVAL_MS: '200',
    RECONCILE_INTERVAL_MS: '200',
    REQUEUE_AFTER_MS: '300',
    ...env,
  })
  const runtime = createWorkerRuntime(config, quiet, builtInSubagents(provider), options)
  ctx.track({ close: () => runtime.shutdownChecked(5_000), isClosed: () => runtime.isStopped() })
  return runtime.start().then(() => runtime)
}

/** Accepts a new delegation to the `scripted` subagent, as the API would. */
export async function accept(db: Db, prompt: string): Promise<string> {
  const attemptId = randomUUID()
  await acceptDelegations(db, [
    {
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
  return eventually(async () => {
    const v = await getAttempt(db, attemptId)
    return v?.status === 'terminal' ? v : undefined
  })
}
