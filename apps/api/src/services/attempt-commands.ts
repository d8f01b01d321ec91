import { randomUUID } from 'node:crypto'
import {
  cascadeCancelReason,
  promptToBlocks,
  readScript,
  requestDigest,
  type AnyAttemptView,
  type BatchItem,
  type DelegationAccepted,
  type DelegationRequest,
  type Prompt,
} from '@baton/contracts'
import type { ApiMetrics, Logger } from '@baton/observability'
import {
  announceClaimable,
  announceSettled,
  sendWorkerCommand,
  type SettlementPublisher,
  type WorkerCommandPublisher,
} from '@baton/queue'
import {
  createGroupBatcher,
  acceptWithinBudgets,
  getAttempt,
  getSession,
  openDescendants,
  recordSteering,
  requestCancels,
  type AcceptDelegationInput,
  type AcceptDelegationOutcome,
  type Db,
  type RequestCancelInput,
  type RequestCancelOutcome,
} from '@baton/store'
import {
  BUILT_IN_SUBAGENT,
  exceededBudget,
  hasBudgets,
  type ProfileBudgets,
  type SubagentCatalog,
} from '@baton/subagents'
import { isRefusal, type Refusal } from '../http/refusals.ts'
import type { Admission } from './admission.ts'
import { awaitAttempt, awaitEnqueued, type SettledDoorbell } from './bounded-wait.ts'
import { readAttemptView } from './attempt-view.ts'
import { countAccepted, countQueuedCancels, timeSubmitWait } from './service-metrics.ts'

export type DelegateOutcome =
  | {
      readonly kind: 'accepted' | 'replayed'
      readonly accepted: DelegationAccepted
      /** Present when the caller asked to wait: the terminal view or the snapshot at the bound. */
      readonly view: AnyAttemptView | undefined
    }
  | Refusal

/** One item of a batch submit: accepted, replayed (its key's first attempt), or refused. */
export type BatchItemOutcome =
  { readonly kind: 'accepted' | 'replayed'; readonly accepted: DelegationAccepted } | Refusal

export type CancelOutcome = { readonly kind: 'cancelled_queued' | 'cancel_requested' } | Refusal
export type SteerOutcome = { readonly kind: 'recorded'; readonly sequence: number } | Refusal
export type ViewOutcome = { readonly kind: 'view'; readonly view: AnyAttemptView } | Refusal

/**
 * The commands on attempts, each in the same order: decide from the ledger, record in the
 * ledger, then notify. A notification that fails is logged once and swallowed by the queue
 * library's one policy: the fact is durable, and heartbeats (workers) or the bound (waits) find it.
 */
/**
 * The port the API asks before it records anything that names a subagent: the shared catalog
 * (libs/subagents) in production, anything with the same answer in a test.
 */
/** A delegation checked before the ledger: ready to record, or refused. */
type Prepared = { readonly kind: 'ready'; readonly input: AcceptDelegationInput } | Refusal

type OverBudget = Extract<Refusal, { readonly kind: 'over_budget' }>

export type SubagentPolicy = Pick<SubagentCatalog, 'admit'> &
  Partial<Pick<SubagentCatalog, 'profiles'>>

export interface AttemptCommands {
  delegate(input: {
    readonly namespaceId: string
    readonly sessionId: string
    readonly request: DelegationRequest
    readonly idempotencyKey: string | undefined
    readonly signal: AbortSignal
  }): Promise<DelegateOutcome>
  /**
   * A batch submit: every item checked and recorded in one ledger statement and enqueued in one
   * `addBulk`, answered per item in order; a refused item writes nothing and fails no other.
   */
  delegateBatch(
    namespaceId: string,
    sessionId: string,
    items: readonly BatchItem[],
  ): Promise<BatchItemOutcome[]>
  // Every command on an existing attempt is scoped by the caller's namespace: an attempt of
  // another namespace is `missing`, exactly like one that does not exist.
  cancel(namespaceId: string, attemptId: string, reason: string | null): Promise<CancelOutcome>
  /**
   * Cancels, as `cancel` does each, every attempt not finished that the run delegated, and those
   * its children delegated, down the tree; each records the cascade and the run as its reason.
   * Answers how many were cancelled or asked to stop.
   */
  cancelDescendants(namespaceId: string, runId: string): Promise<number>
  steer(namespaceId: string, attemptId: string, content: Prompt): Promise<SteerOutcome>
  read(namespaceId: string, attemptId: string): Promise<ViewOutcome>
  wait(
    namespaceId: string,
    attemptId: string,
    timeoutMs: number,
    signal: AbortSignal,
  ): Promise<ViewOutcome>
}

export function createAttemptCommands(deps: {
  readonly db: Db
  readonly admission: Admission
  readonly doorbell: SettledDoorbell
  readonly workerCommands: WorkerCommandPublisher
  readonly settlements: SettlementPublisher
  readonly subagents: SubagentPolicy
  readonly logger: Logger
  readonly metrics?: ApiMetrics
}): AttemptCommands {
  const log = deps.logger.child({ component: 'attempt-commands' })
  // A burst of cancels (a parent stopping its fan-out) shares one ledger statement; their
  // notifications then leave in the same tick, so the pipelined Redis connection sends them in
  // one write.
  const cancels = createGroupBatcher<RequestCancelInput, RequestCancelOutcome>(
    async (inputs) => {
      const outcomes = await requestCancels(deps.db, inputs)
      countQueuedCancels(deps.metrics, outcomes)
      return outcomes
    },
    { maxBatch: 256, maxInFlight: 2 },
  )

  /**
   * What every delegation passes before the ledger: the subagent must be runnable here, and a
   * script for Baton's own child must be one it understands. Ids are minted here, once.
   */
  function prepare(
    namespaceId: string,
    sessionId: string,
    request: Omit<BatchItem, 'idempotencyKey'>,
    idempotencyKey: string | undefined,
  ): Prepared {
    const admission = deps.subagents.admit(request.name)
    if (admission.kind === 'unknown')
      return { kind: 'unknown_subagent', name: request.name, known: admission.known } as const
    if (admission.kind === 'refused')
      return { kind: 'subagent_unavailable', name: request.name, reason: admission.reason } as const
    const prompt = promptToBlocks(request.prompt)
    if (request.name === BUILT_IN_SUBAGENT) {
      // Baton's own child: a script it would not understand is refused now, not run as an echo.
      const reading = readScript(prompt)
      if (reading.kind === 'invalid') return { kind: 'invalid_script', issues: reading.issues }
    }
    const metadata = request.metadata ?? {}
    return {
      kind: 'ready',
      input: {
        namespaceId,
        sessionId,
        name: request.name,
        prompt,
        metadata,
        attemptId: randomUUID(),
        newAgentId: randomUUID(),
        agentId: request.agentId,
        parentRunId: request.parentRunId,
        parentAttemptId: request.parentAttemptId,
        ...(idempotencyKey === undefined
          ? {}
          : {
              idempotencyKey,
              requestDigest: requestDigest({
                name: request.name,
                prompt,
                agentId: request.agentId ?? null,
                metadata,
                ...(request.parentRunId === undefined ? {} : { parentRunId: request.parentRunId }),
                ...(request.parentAttemptId === undefined
                  ? {}
                  : { parentAttemptId: request.parentAttemptId }),
              }),
            }),
      },
    }
  }

  /** The ledger's answer for one delegation: accepted or replayed, or the refusal it means. */
  function recorded(
    outcome: AcceptDelegationOutcome,
    input: AcceptDelegationInput,
  ): Extract<AcceptDelegationOutcome, { kind: 'accepted' | 'replayed' }> | Refusal {
    switch (outcome.kind) {
      case 'agent_not_found':
        return {
          kind: 'agent_not_found',
          agentId: input.agentId ?? '',
          sessionId: input.sessionId,
          name: input.name,
        } as const
      case 'agent_busy':
        return { kind: 'agent_busy', agentId: input.agentId ?? '' } as const
      case 'key_reused':
        return outcome
      case 'run_not_found':
        return { kind: 'run_not_found', runId: input.parentRunId ?? '' } as const
      case 'run_not_active':
        return {
          kind: 'run_not_active',
          runId: input.parentRunId ?? '',
          status: outcome.status,
        } as const
      case 'session_deleted':
        return { kind: 'session_deleted', sessionId: input.sessionId } as const
      case 'parent_attempt_ended':
        return { kind: 'parent_attempt_ended', attemptId: input.parentAttemptId ?? '' } as const
      case 'accepted':
      case 'replayed':
        log.debug(
          {
            attemptId: outcome.attemptId,
            agentId: outcome.agentId,
            subagent: input.name,
            outcome: outcome.kind,
          },
          'delegation accepted',
        )
        return outcome
      default: {
        const unexpected: never = outcome
        throw new Error(`unexpected outcome ${JSON.stringify(unexpected)}`)
      }
    }
  }

  // Only a deployment whose profiles bound something pays a read of the session per delegation.
  const budgeted = [...(deps.subagents.profiles?.values() ?? [])].some((p) => hasBudgets(p.budgets))

  /** The budgets of a hosted session's profile, when it bounds delegation (none: unbounded). */
  async function budgetsOf(
    namespaceId: string,
    sessionId: string,
  ): Promise<ProfileBudgets | undefined> {
    if (!budgeted) return undefined
    // A session's profile is set when it is created and never changes: read outside the lock.
    const session = await getSession(deps.db, namespaceId, sessionId)
    if (session?.profile == null) return undefined
    const budgets = deps.subagents.profiles?.get(session.profile)?.budgets
    return hasBudgets(budgets) ? budgets : undefined
  }

  /**
   * Records delegations into one session, answered per input in order. Into a hosted session
   * whose profile bounds delegation, each is checked by the one budget check the parent's
   * `delegate` tool makes and admitted in the same transaction (`over_budget` writes nothing);
   * any other session's are recorded as they always were, batched with concurrent ones when
   * `single`, in one statement otherwise.
   */
  async function record(
    namespaceId: string,
    sessionId: string,
    inputs: readonly AcceptDelegationInput[],
    single: boolean,
  ): Promise<(AcceptDelegationOutcome | OverBudget)[]> {
    if (inputs.length === 0) return []
    const budgets = await budgetsOf(namespaceId, sessionId)
    if (budgets === undefined)
      return single
        ? Promise.all(inputs.map((input) => deps.admission.accept(input)))
        : deps.admission.acceptAll(inputs)
    const outcomes = await acceptWithinBudgets(
      deps.db,
      { namespaceId, sessionId },
      inputs,
      (use, input) => exceededBudget(budgets, use, input.parentRunId !== undefined),
    )
    countAccepted(
      deps.metrics,
      outcomes.flatMap((o) => (o.kind === 'over_budget' ? [] : [o])),
    )
    return outcomes.map((o) =>
      o.kind === 'over_budget' ? ({ kind: 'over_budget', sessionId, ...o.refusal } as const) : o,
    )
  }

  /** The answer for one recorded delegation: accepted or replayed, or the refusal it means. */
  function answered(
    outcome: AcceptDelegationOutcome | OverBudget,
    input: AcceptDelegationInput,
  ): Extract<AcceptDelegationOutcome, { kind: 'accepted' | 'replayed' }> | Refusal {
    return outcome.kind === 'over_budget' ? outcome : recorded(outcome, input)
  }

  async function delegate(
    input: Parameters<AttemptCommands['delegate']>[0],
  ): Promise<DelegateOutcome> {
    const { namespaceId, sessionId, request } = input
    const prepared = prepare(namespaceId, sessionId, request, input.idempotencyKey)
    if (prepared.kind !== 'ready') return prepared
    const [first] = await record(namespaceId, sessionId, [prepared.input], true)
    if (first === undefined) throw new Error('the ledger answered nothing')
    const outcome = answered(first, prepared.input)
    if (isRefusal(outcome)) return outcome
    const { attemptId, agentId } = outcome
    const accepted = { agentId, attemptId, status: 'accepted' } as const
    const bound = request.wait?.timeoutMs
    let view: AnyAttemptView | undefined
    if (outcome.kind === 'replayed') {
      // The first request enqueued it (or the reconciler will): answer as it stands.
      if (bound !== undefined)
        view = await awaitAttempt(deps, { namespaceId }, attemptId, bound, input.signal)
    } else if (bound === undefined) {
      await deps.admission.enqueue({ attemptId, namespaceId, sessionId })
    } else {
      const waited = timeSubmitWait(deps.metrics)
      view = await awaitEnqueued(
        deps,
        attemptId,
        () => deps.admission.enqueue({ attemptId, namespaceId, sessionId }),
        bound,
        input.signal,
      )
      waited(view)
    }
    // An accepted attempt is never deleted: a read that finds nothing is a broken invariant.
    if (bound !== undefined && view === undefined) throw new Error('accepted attempt vanished')
    return { kind: outcome.kind, accepted, view }
  }

  async function delegateBatch(
    namespaceId: string,
    sessionId: string,
    items: readonly BatchItem[],
  ): Promise<BatchItemOutcome[]> {
    const prepared = items.map((item) => prepare(namespaceId, sessionId, item, item.idempotencyKey))
    const ready = prepared.flatMap((p) => (p.kind === 'ready' ? [p.input] : []))
    // One ledger statement for the whole batch, then one `addBulk` for what it accepted.
    const outcomes = await record(namespaceId, sessionId, ready, false)
    let next = 0
    const answers = prepared.map((p): BatchItemOutcome => {
      if (p.kind !== 'ready') return p
      const outcome = outcomes[next]
      next += 1
      if (outcome === undefined)
        throw new Error('the ledger answered fewer items than it was given')
      const answer = answered(outcome, p.input)
      if (isRefusal(answer)) return answer
      return {
        kind: answer.kind,
        accepted: { agentId: answer.agentId, attemptId: answer.attemptId, status: 'accepted' },
      }
    })
    // A replay was enqueued by the request that created it (or will be, by the reconciler).
    await deps.admission.enqueueAll(
      answers.flatMap((a) =>
        a.kind === 'accepted' ? [{ attemptId: a.accepted.attemptId, namespaceId, sessionId }] : [],
      ),
    )
    log.info(
      { sessionId, items: items.length, accepted: ready.length },
      'batch of delegations recorded',
    )
    return answers
  }

  async function cancel(
    namespaceId: string,
    attemptId: string,
    reason: string | null,
  ): Promise<CancelOutcome> {
    const outcome = await cancels.submit({ namespaceId, attemptId, reason })
    switch (outcome.kind) {
      case 'missing':
      case 'terminal':
        return { kind: outcome.kind, attemptId }
      case 'cancelled_queued':
        // Terminal now: waits on it may return at once, and its parent session's claims may
        // find it admitted.
        await announceSettled(deps.settlements, attemptId, log)
        if (outcome.parentSession !== undefined)
          await announceClaimable(deps.settlements, attemptId, outcome.parentSession, log)
        break
      case 'cancel_requested':
        await sendWorkerCommand(deps.workerCommands, { eventName: 'cancel', attemptId }, log)
        break
      default: {
        const unexpected: never = outcome
        throw new Error(`unexpected outcome ${JSON.stringify(unexpected)}`)
      }
    }
    // Debug, not info: the ledger's transition row is the record, and a burst of cancels would
    // otherwise pay one log write per request.
    log.debug({ attemptId, outcome: outcome.kind }, 'cancel recorded')
    return outcome
  }

  async function cancelDescendants(namespaceId: string, runId: string): Promise<number> {
    const reason = cascadeCancelReason(runId)
    // Every level is recorded before the next is read: a child that is about to delegate finds
    // its cancel already recorded, and its new children are found by the next read.
    let cancelled = 0
    const seen = new Set<string>()
    for (;;) {
      const open = (await openDescendants(deps.db, { namespaceId, runId })).filter(
        (id) => !seen.has(id),
      )
      if (open.length === 0) return cancelled
      for (const id of open) seen.add(id)
      const outcomes = await Promise.all(open.map((id) => cancel(namespaceId, id, reason)))
      cancelled += outcomes.filter(
        (o) => o.kind === 'cancelled_queued' || o.kind === 'cancel_requested',
      ).length
    }
  }

  async function steer(
    namespaceId: string,
    attemptId: string,
    content: Prompt,
  ): Promise<SteerOutcome> {
    const row = await getAttempt(deps.db, attemptId, { namespaceId })
    if (row === undefined) return { kind: 'missing', attemptId }
    if (row.status === 'terminal') return { kind: 'terminal', attemptId }
    const admission = deps.subagents.admit(row.name)
    if (admission.kind !== 'runnable' || !admission.steerable)
      return { kind: 'steering_unsupported', name: row.name }
    const outcome = await recordSteering(deps.db, { attemptId, content: promptToBlocks(content) })
    if (outcome.kind !== 'recorded') return { kind: outcome.kind, attemptId }
    await sendWorkerCommand(deps.workerCommands, { eventName: 'steer', attemptId }, log)
    log.info({ attemptId, sequence: outcome.sequence }, 'steering recorded')
    return outcome
  }

  async function read(namespaceId: string, attemptId: string): Promise<ViewOutcome> {
    const view = await readAttemptView(deps.db, attemptId, { namespaceId })
    return view === undefined ? { kind: 'missing', attemptId } : { kind: 'view', view }
  }

  async function wait(
    namespaceId: string,
    attemptId: string,
    timeoutMs: number,
    signal: AbortSignal,
  ): Promise<ViewOutcome> {
    const view = await awaitAttempt(deps, { namespaceId }, attemptId, timeoutMs, signal)
    return view === undefined ? { kind: 'missing', attemptId } : { kind: 'view', view }
  }

  return { delegate, delegateBatch, cancel, cancelDescendants, steer, read, wait }
}
