import { randomUUID } from 'node:crypto'
import {
  promptToBlocks,
  requestDigest,
  type CreateSessionRequest,
  type HostedRunView,
  type Prompt,
  type RunView,
  type SessionView,
} from '@baton/contracts'
import type { Logger } from '@baton/observability'
import { enqueueRouted, type AttemptQueues } from '@baton/queue'
import {
  cancelQueuedHostedRun,
  createHostedRun,
  createHostedSession,
  getRunWithOutput,
  getSession,
  readSessionEvents,
  startNextRun,
  type Db,
  type RunRecord,
  type SessionEventRecord,
  type SessionRecord,
} from '@baton/store'

/** Events read per statement of a stream. */
const EVENT_PAGE = 500
import type { SubagentCatalog } from '@baton/subagents'
import type { Refusal } from '../http/refusals.ts'
import type { AttemptCommands } from './attempt-commands.ts'
import type { SettledDoorbell } from './bounded-wait.ts'
import { toRunView } from './run-commands.ts'

export type SessionOutcome = { readonly kind: 'session'; readonly view: SessionView } | Refusal
export type HostedRunOutcome = { readonly kind: 'run'; readonly view: HostedRunView } | Refusal

/**
 * Hosted sessions and their runs: a session created with a profile has its parent runs executed
 * by the fleet, one at a time in admission order, each as an attempt (with the run's id) of the
 * session's parent agent. Decide and record in the ledger, then enqueue.
 */
export interface HostedCommands {
  createSession(namespaceId: string, request: CreateSessionRequest): Promise<SessionOutcome>
  readSession(namespaceId: string, sessionId: string): Promise<SessionOutcome>
  /**
   * Queues a run of a hosted session; with `waitMs`, one bounded wait for its end. With an
   * `idempotencyKey`, a retry of the same request answers the run the first one queued (its wait
   * included), and the key with another request is refused (`key_reused`); nothing is written.
   */
  createRun(
    namespaceId: string,
    sessionId: string,
    request: {
      readonly input: Prompt
      readonly waitMs: number | undefined
      readonly idempotencyKey: string | undefined
    },
    signal: AbortSignal,
  ): Promise<HostedRunOutcome>
  readRun(namespaceId: string, runId: string): Promise<HostedRunOutcome>
  /** One bounded wait for the run's end; at the bound, the run as it is then. */
  waitRun(
    namespaceId: string,
    runId: string,
    timeoutMs: number,
    signal: AbortSignal,
  ): Promise<HostedRunOutcome>
  /**
   * Where a stream reads: a session's events, or a run's (within its session). Answers the
   * session, or the refusal of an unknown session or run.
   */
  eventScope(
    namespaceId: string,
    target: { readonly sessionId: string } | { readonly runId: string },
  ): Promise<
    { readonly kind: 'scope'; readonly sessionId: string; readonly runId?: string } | Refusal
  >
  /** The next events of a stream after `afterSeq` (see `readSessionEvents`). */
  readEvents(
    namespaceId: string,
    scope: { readonly sessionId: string; readonly runId?: string | undefined },
    afterSeq: number,
  ): Promise<readonly SessionEventRecord[]>
  /**
   * Cancels a hosted run: queued, it ends at once; started, its attempt is cancelled. With
   * `cascade`, then every attempt below the run that has not finished (of a host run too, whose
   * host then ends it: `host_run`).
   */
  cancelRun(
    namespaceId: string,
    runId: string,
    cascade: boolean,
  ): Promise<HostedRunOutcome | { kind: 'host_run' }>
}

export function createHostedCommands(deps: {
  readonly db: Db
  readonly queues: AttemptQueues
  readonly doorbell: SettledDoorbell
  readonly attempts: Pick<AttemptCommands, 'cancel' | 'cancelDescendants'>
  readonly subagents: Pick<SubagentCatalog, 'profiles'>
  readonly logger: Logger
}): HostedCommands {
  const log = deps.logger.child({ component: 'hosted-commands' })

  /** Starts the session's next run if it is idle, and enqueues its attempt. */
  async function startNext(namespaceId: string, sessionId: string): Promise<void> {
    const started = await startNextRun(deps.db, { namespaceId, sessionId })
    if (started !== undefined)
      await enqueueRouted(deps.queues, [{ attemptId: started, namespaceId, sessionId }])
  }

  async function readRun(namespaceId: string, runId: string): Promise<HostedRunOutcome> {
    const found = await getRunWithOutput(deps.db, namespaceId, runId)
    if (found === undefined) return { kind: 'run_not_found', runId }
    return { kind: 'run', view: toHostedRunView(found.run, found.hosted, found.output) }
  }

  async function waitRun(
    namespaceId: string,
    runId: string,
    timeoutMs: number,
    signal: AbortSignal,
  ): Promise<HostedRunOutcome> {
    const first = await readRun(namespaceId, runId)
    if (first.kind !== 'run' || ended(first.view) || timeoutMs <= 0) return first
    // A hosted run's attempt has the run's id: its settlement rings the run's key.
    const subscription = deps.doorbell.subscribe(runId)
    try {
      const second = await readRun(namespaceId, runId)
      if (second.kind !== 'run' || ended(second.view)) return second
      await subscription.wait(timeoutMs, signal)
      return await readRun(namespaceId, runId)
    } finally {
      subscription.cancel()
    }
  }

  return {
    async createSession(namespaceId, request) {
      if (!deps.subagents.profiles.has(request.profile))
        return {
          kind: 'unknown_profile',
          profile: request.profile,
          known: [...deps.subagents.profiles.keys()],
        }
      const created = await createHostedSession(deps.db, {
        namespaceId,
        sessionId: randomUUID(),
        parentAgentId: randomUUID(),
        profile: request.profile,
        metadata: request.metadata,
      })
      if (created === 'exists') throw new Error('a fresh session id was taken')
      log.debug({ sessionId: created.id, profile: request.profile }, 'hosted session created')
      return { kind: 'session', view: toSessionView(created) }
    },

    async readSession(namespaceId, sessionId) {
      const session = await getSession(deps.db, namespaceId, sessionId)
      if (session === undefined) return { kind: 'session_not_found', sessionId }
      return { kind: 'session', view: toSessionView(session) }
    },

    async createRun(namespaceId, sessionId, { input, waitMs, idempotencyKey }, signal) {
      const created = await createHostedRun(deps.db, {
        namespaceId,
        sessionId,
        runId: randomUUID(),
        input,
        ...(idempotencyKey === undefined
          ? {}
          : { idempotencyKey, requestDigest: requestDigest({ input: promptToBlocks(input) }) }),
      })
      switch (created.kind) {
        case 'key_reused':
          return { kind: 'key_reused' }
        case 'session_not_found':
          return { kind: 'session_not_found', sessionId }
        case 'not_hosted':
          return { kind: 'session_not_hosted', sessionId, hosted: false }
        case 'session_deleted':
          return { kind: 'session_deleted', sessionId }
        case 'created':
        case 'replayed':
          break
      }
      const runId = created.run.id
      // A replay starts the next run too: the first request may have been cut before it did.
      await startNext(namespaceId, sessionId)
      if (waitMs !== undefined) return waitRun(namespaceId, runId, waitMs, signal)
      return readRun(namespaceId, runId)
    },

    readRun,
    waitRun,

    async eventScope(namespaceId, target) {
      if ('sessionId' in target) {
        const session = await getSession(deps.db, namespaceId, target.sessionId)
        return session === undefined
          ? { kind: 'session_not_found', sessionId: target.sessionId }
          : { kind: 'scope', sessionId: session.id }
      }
      const found = await getRunWithOutput(deps.db, namespaceId, target.runId)
      return found === undefined
        ? { kind: 'run_not_found', runId: target.runId }
        : { kind: 'scope', sessionId: found.run.sessionId, runId: target.runId }
    },

    readEvents: (namespaceId, scope, afterSeq) =>
      readSessionEvents(deps.db, {
        namespaceId,
        sessionId: scope.sessionId,
        runId: scope.runId,
        afterSeq,
        limit: EVENT_PAGE,
      }),

    async cancelRun(namespaceId, runId, cascade) {
      const found = await getRunWithOutput(deps.db, namespaceId, runId)
      if (found === undefined) return { kind: 'run_not_found', runId }
      if (found.hosted) {
        const queued = await cancelQueuedHostedRun(deps.db, namespaceId, runId)
        if (queued === undefined && !ended(toHostedRunView(found.run, true, found.output))) {
          const cancelled = await deps.attempts.cancel(namespaceId, runId, 'run cancelled')
          if (cancelled.kind !== 'cancelled_queued' && cancelled.kind !== 'cancel_requested')
            log.debug(
              { runId, outcome: cancelled.kind },
              'hosted run cancel found its attempt done',
            )
        }
      }
      // The run's own cancel is recorded first, so it delegates nothing new once it has read it.
      if (cascade) {
        const cancelled = await deps.attempts.cancelDescendants(namespaceId, runId)
        log.info({ runId, cancelled }, 'cascade cancel recorded')
      }
      return found.hosted ? readRun(namespaceId, runId) : { kind: 'host_run' }
    },
  }
}

function ended(view: RunView): boolean {
  return view.status !== 'pending' && view.status !== 'active'
}

export function toHostedRunView(
  run: RunRecord,
  hosted: boolean,
  output: string | null,
): HostedRunView {
  return { ...toRunView(run), hosted, output }
}

function toSessionView(session: SessionRecord): SessionView {
  return {
    sessionId: session.id,
    profile: session.profile,
    metadata: session.metadata,
    createdAt: session.createdAt.toISOString(),
    deletedAt: session.deletedAt?.toISOString() ?? null,
  }
}
