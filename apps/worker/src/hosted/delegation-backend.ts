import { randomUUID } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import { isTerminalView, Limits, uuidSchema } from '@baton/contracts'
import type { AsyncDelegationBackend, DelegationToolAnswer } from '@baton/agents'
import { exceededBudget, hasBudgets, type ProfileBudgets } from '@baton/subagents'
import { enqueueRouted, type AttemptQueues } from '@baton/queue'
import {
  acceptDelegations,
  acceptWithinBudgets,
  getAttempt,
  isParentAgentName,
  recordSteering,
  requestCancel,
  toAttemptView,
  type AcceptDelegationInput,
  type AcceptDelegationOutcome,
  type AttemptRecord,
  type Db,
} from '@baton/store'

/** The hosted run whose parent model calls the tools. */
export interface HostedRunScope {
  readonly namespaceId: string
  readonly sessionId: string
  readonly runId: string
}

export interface HostedBackendDeps {
  readonly db: Db
  readonly queues: AttemptQueues
  /** The subagents the run's profile exposes: exactly these may be delegated to. */
  readonly subagents: readonly { readonly name: string; readonly description: string }[]
  /** The bound of one `wait_subagent` when the model names none. */
  readonly defaultWaitMs?: number
  /** The profile's bounds on delegation (none: unbounded). */
  readonly budgets?: ProfileBudgets
}

/**
 * The durable backend of a hosted parent's async tools: straight to the ledger and the queue (not
 * over HTTP). `delegate` accepts through the one admission path (`acceptDelegations`) with the
 * run as parent, so a late result comes back as a continuation of the session; the others act
 * only on attempts of the run's own session (another session's id is unknown here). Every
 * refusal is an `{ error }` the model reads, with nothing written.
 */
export function createHostedDelegationBackend(
  deps: HostedBackendDeps,
  run: HostedRunScope,
): AsyncDelegationBackend {
  const exposed = new Set(deps.subagents.map((s) => s.name))
  // A run's delegations are admitted one after another, in the order the model made them.
  let admitting: Promise<unknown> = Promise.resolve()
  const budgets = hasBudgets(deps.budgets) ? deps.budgets : undefined

  /**
   * Records one delegation of the run: with budgets, checked by the one budget check and admitted
   * in one transaction with it (so a delegation over HTTP into the session at the same moment
   * cannot take it past a budget); the message of the budget it would exceed is the error the
   * model reads. Without budgets, the admission statement alone.
   */
  async function record(
    input: AcceptDelegationInput,
  ): Promise<AcceptDelegationOutcome | { readonly error: string }> {
    if (budgets === undefined) {
      const [outcome] = await acceptDelegations(deps.db, [input])
      if (outcome === undefined) throw new Error('the ledger answered nothing')
      return outcome
    }
    const [outcome] = await acceptWithinBudgets(deps.db, run, [input], (use) =>
      exceededBudget(budgets, use, true),
    )
    if (outcome === undefined) throw new Error('the ledger answered nothing')
    return outcome.kind === 'over_budget' ? { error: outcome.refusal.message } : outcome
  }

  /** A child attempt of this session, or the error the model is told. */
  async function childAttempt(
    attemptId: string,
  ): Promise<{ readonly child: AttemptRecord } | { readonly refusal: DelegationToolAnswer }> {
    const refusal = { error: `unknown attempt_id "${attemptId}": not a subagent attempt of yours` }
    if (!uuidSchema.safeParse(attemptId).success) return { refusal }
    const record = await getAttempt(deps.db, attemptId, { namespaceId: run.namespaceId })
    if (
      record === undefined ||
      record.sessionId !== run.sessionId ||
      isParentAgentName(record.name)
    )
      return { refusal }
    return { child: record }
  }

  async function admit({
    name,
    prompt,
    agentId,
  }: {
    readonly name: string
    readonly prompt: string
    readonly agentId?: string | undefined
  }): Promise<DelegationToolAnswer> {
    if (!exposed.has(name))
      return {
        error: `unknown subagent "${name}"; you may delegate to: ${[...exposed].join(', ') || 'none'}`,
      }
    if (agentId !== undefined && !uuidSchema.safeParse(agentId).success)
      return { error: `unknown agent_id "${agentId}"` }
    const attemptId = randomUUID()
    const outcome = await record({
      namespaceId: run.namespaceId,
      sessionId: run.sessionId,
      name,
      prompt,
      metadata: {},
      attemptId,
      newAgentId: randomUUID(),
      agentId,
      parentRunId: run.runId,
    })
    if ('error' in outcome) return outcome
    switch (outcome.kind) {
      case 'accepted':
        await enqueueRouted(deps.queues, [
          { attemptId, namespaceId: run.namespaceId, sessionId: run.sessionId },
        ])
        return { agent_id: outcome.agentId, attempt_id: outcome.attemptId, status: 'accepted' }
      case 'agent_not_found':
        return { error: `unknown agent_id "${agentId ?? ''}": no agent of yours named "${name}"` }
      case 'agent_busy':
        return {
          error: `agent_id "${agentId ?? ''}" is busy: its attempt has not finished (wait for it or cancel it)`,
        }
      case 'session_deleted':
        return { error: 'this session is deleted: nothing new can be delegated' }
      case 'run_not_active':
      case 'run_not_found':
        return { error: 'this run has ended: it can delegate nothing more' }
      // Unkeyed, so never replayed nor refused by a key; it names no parent attempt.
      case 'replayed':
      case 'parent_attempt_ended':
      case 'key_reused':
        throw new Error(`unexpected admission outcome ${outcome.kind}`)
    }
  }

  return {
    subagents: deps.subagents,

    delegate(input) {
      const admitted = admitting.then(() => admit(input))
      admitting = admitted.catch(() => undefined)
      return admitted
    },

    async steer({ attemptId, message }) {
      const found = await childAttempt(attemptId)
      if ('refusal' in found) return found.refusal
      const { child } = found
      const recorded = await recordSteering(deps.db, {
        attemptId: child.id,
        content: [{ type: 'text', text: message }],
      })
      return recorded.kind === 'recorded'
        ? { attempt_id: child.id, steered: true }
        : { error: `attempt "${attemptId}" has finished: it cannot be steered` }
    },

    async cancel({ attemptId }) {
      const found = await childAttempt(attemptId)
      if ('refusal' in found) return found.refusal
      const { child } = found
      const outcome = await requestCancel(deps.db, {
        attemptId: child.id,
        reason: 'cancelled by its parent',
        namespaceId: run.namespaceId,
      })
      return outcome.kind === 'terminal'
        ? { error: `attempt "${attemptId}" has already finished` }
        : { attempt_id: child.id, cancel: 'requested' }
    },

    // One bounded wait: read, wait out the bound once if it has not finished, read again.
    async wait({ attemptId, timeoutMs }) {
      const found = await childAttempt(attemptId)
      if ('refusal' in found) return found.refusal
      const { child } = found
      const first = toAttemptView(child)
      if (isTerminalView(first)) return { attempt: first }
      const bound = Math.min(timeoutMs ?? deps.defaultWaitMs ?? 1000, Limits.waitTimeoutMsMax)
      await sleep(bound)
      const again = await getAttempt(deps.db, child.id)
      return { attempt: again === undefined ? first : toAttemptView(again) }
    },

    info() {
      return Promise.resolve({
        subagents: deps.subagents.map((s) => ({ ...s, available: true })),
      })
    },
  }
}
