import { BatonError, ErrorCode } from '@baton/contracts'

/**
 * Every way a command can be refused, as an outcome. Services return these; the route turns one
 * into an error here and nowhere else (its status comes from `errors.ts`).
 */
export type Refusal =
  | { readonly kind: 'missing'; readonly attemptId: string }
  | { readonly kind: 'terminal'; readonly attemptId: string }
  | { readonly kind: 'unknown_subagent'; readonly name: string; readonly known: readonly string[] }
  | { readonly kind: 'subagent_unavailable'; readonly name: string; readonly reason: string }
  | { readonly kind: 'steering_unsupported'; readonly name: string }
  | {
      readonly kind: 'agent_not_found'
      readonly agentId: string
      readonly sessionId: string
      readonly name: string
    }
  | { readonly kind: 'agent_busy'; readonly agentId: string }
  | { readonly kind: 'key_reused' }
  | { readonly kind: 'run_not_found'; readonly runId: string }
  | { readonly kind: 'run_not_active'; readonly runId: string; readonly status: string }
  | { readonly kind: 'stale_claim'; readonly runId: string }
  | { readonly kind: 'not_consumable'; readonly attemptIds: readonly string[] }
  | { readonly kind: 'session_not_found'; readonly sessionId: string }
  | { readonly kind: 'session_deleted'; readonly sessionId: string }
  | {
      readonly kind: 'unknown_profile'
      readonly profile: string
      readonly known: readonly string[]
    }
  /** `hosted`: what the session is (the operation needs the other kind). */
  | { readonly kind: 'session_not_hosted'; readonly sessionId: string; readonly hosted: boolean }
  | { readonly kind: 'parent_attempt_ended'; readonly attemptId: string }
  /** A budget of the hosted session's profile, with its limit and what is used of it. */
  | {
      readonly kind: 'over_budget'
      readonly sessionId: string
      readonly budget: string
      readonly limit: number
      readonly used: number
      readonly message: string
    }
  | {
      readonly kind: 'invalid_script'
      readonly issues: readonly { readonly path: string; readonly message: string }[]
    }

export type RefusalKind = Refusal['kind']

const REFUSAL_KINDS: ReadonlySet<string> = new Set<RefusalKind>([
  'missing',
  'terminal',
  'unknown_subagent',
  'subagent_unavailable',
  'steering_unsupported',
  'agent_not_found',
  'agent_busy',
  'key_reused',
  'invalid_script',
  'run_not_found',
  'run_not_active',
  'stale_claim',
  'not_consumable',
  'session_not_found',
  'session_deleted',
  'unknown_profile',
  'session_not_hosted',
  'parent_attempt_ended',
  'over_budget',
])

export function isRefusal<T extends { readonly kind: string }>(
  outcome: T | Refusal,
): outcome is Refusal {
  return REFUSAL_KINDS.has(outcome.kind)
}

/** The error a refusal leaves the API as. */
export function refusalError(refusal: Refusal): BatonError {
  switch (refusal.kind) {
    case 'missing':
      return new BatonError(ErrorCode.AttemptNotFound, `no attempt ${refusal.attemptId}`)
    case 'terminal':
      return new BatonError(ErrorCode.AttemptTerminal, 'the attempt is already terminal')
    case 'unknown_subagent':
      return new BatonError(ErrorCode.UnknownSubagent, `no subagent named "${refusal.name}"`, {
        details: { known: [...refusal.known] },
      })
    case 'subagent_unavailable':
      return new BatonError(
        ErrorCode.SubagentUnavailable,
        `subagent "${refusal.name}" cannot run here`,
        { details: { reason: refusal.reason } },
      )
    case 'steering_unsupported':
      return new BatonError(
        ErrorCode.SteeringUnsupported,
        `subagent "${refusal.name}" cannot be steered`,
      )
    case 'agent_not_found':
      return new BatonError(
        ErrorCode.AgentNotFound,
        `no agent ${refusal.agentId} named "${refusal.name}" in session "${refusal.sessionId}"`,
      )
    case 'agent_busy':
      return new BatonError(
        ErrorCode.AgentBusy,
        'the agent already has an attempt that is not terminal',
        { details: { agentId: refusal.agentId } },
      )
    case 'key_reused':
      return new BatonError(
        ErrorCode.IdempotencyKeyReused,
        'this Idempotency-Key was already used in this session with a different request',
      )
    case 'invalid_script':
      return new BatonError(
        ErrorCode.ValidationFailed,
        'the prompt is a JSON object but not a script the scripted subagent understands',
        {
          details: { issues: refusal.issues.map((i) => ({ ...i, path: `body/prompt/${i.path}` })) },
        },
      )
    case 'run_not_found':
      return new BatonError(ErrorCode.RunNotFound, `no run ${refusal.runId}`)
    case 'run_not_active':
      return new BatonError(ErrorCode.RunNotActive, `the run is ${refusal.status}, not active`, {
        details: { runId: refusal.runId, status: refusal.status },
      })
    case 'stale_claim':
      return new BatonError(
        ErrorCode.StaleClaim,
        'this claim is not the current claim of the continuation, or its lease expired',
        { details: { runId: refusal.runId } },
      )
    case 'not_consumable':
      return new BatonError(
        ErrorCode.ResultNotConsumable,
        'these results cannot be consumed by this run',
        { details: { attemptIds: [...refusal.attemptIds] } },
      )
    case 'session_not_found':
      return new BatonError(ErrorCode.SessionNotFound, `no session "${refusal.sessionId}"`)
    case 'session_deleted':
      return new BatonError(
        ErrorCode.SessionDeleted,
        `session "${refusal.sessionId}" is deleted and admits nothing new`,
      )
    case 'unknown_profile':
      return new BatonError(ErrorCode.UnknownProfile, `no profile named "${refusal.profile}"`, {
        details: { known: [...refusal.known] },
      })
    case 'session_not_hosted':
      return new BatonError(
        ErrorCode.SessionNotHosted,
        refusal.hosted
          ? `session "${refusal.sessionId}" is hosted: its runs take an \`input\` and run on the fleet`
          : `session "${refusal.sessionId}" has no profile: its host creates and ends its runs`,
      )
    case 'parent_attempt_ended':
      return new BatonError(
        ErrorCode.ParentAttemptEnded,
        `no attempt ${refusal.attemptId} of this session that has not finished`,
      )
    case 'over_budget':
      return new BatonError(ErrorCode.BudgetExceeded, refusal.message, {
        details: {
          sessionId: refusal.sessionId,
          budget: refusal.budget,
          limit: refusal.limit,
          used: refusal.used,
        },
      })
    default: {
      const unexpected: never = refusal
      throw new Error(`unexpected refusal ${JSON.stringify(unexpected)}`)
    }
  }
}

/** The outcome itself, or the error its refusal maps to (thrown). */
export function unlessRefused<T extends { readonly kind: string }>(outcome: T | Refusal): T {
  if (isRefusal(outcome)) throw refusalError(outcome)
  return outcome
}
