import { z } from 'zod'

/**
 * Baton's one durable failure vocabulary: what a terminal attempt stores and the API shows as its
 * `failureCategory`. A safe category a consumer can filter and branch on, never a message or a
 * stack trace. One spelling per concept: every source (the worker, the reconciler, the spawn
 * runtime, ACP agents, structured output) produces exactly these values, and whatever a provider
 * declares is mapped into this set before it is stored. Values are never renamed in place: a
 * rename is a migration that rewrites stored rows.
 */
export const FailureCategory = {
  // The worker and the reconciler.
  /** The child ended `error` without naming a category of its own. */
  ChildFailed: 'child_failed',
  /** Its worker vanished or lost the lease mid-run; the child is never run a second time. */
  ProcessLost: 'process_lost',
  /** A user's cancel (of a queued or of a running attempt). */
  Cancelled: 'cancelled',
  /** Its worker shut down and aborted the child. */
  Shutdown: 'shutdown',
  /** The provider failed to start or threw, or declared a category outside this set. */
  ProviderFault: 'provider_fault',
  /** The child ended with a stop reason Baton does not know (seed 003: a failure). */
  UnknownStopReason: 'unknown_stop_reason',
  /** The child's history did not extend the history it was resumed from; nothing was appended. */
  ContextRejected: 'context_rejected',
  /** The attempt names a subagent this worker does not run. */
  UnknownSubagent: 'unknown_subagent',
  /**
   * The ledger kept refusing this attempt's own writes with an unexpected error while its worker
   * held the lease; the worker recorded this instead of abandoning the attempt.
   */
  StoreFault: 'store_fault',
  /**
   * The child's output did not fit in its worker's output memory budget
   * (`OUTPUT_MEMORY_BUDGET_BYTES`) at the time: the worker kept none of it.
   */
  OutputBudgetExceeded: 'output_budget_exceeded',
  /**
   * The output was above the per-artifact limit, or would have taken its namespace above its
   * artifact byte limit; nothing of it was stored.
   */
  QuotaExceeded: 'quota_exceeded',
  /**
   * The history the child added would have taken its agent past its namespace's agent history
   * limit (`AGENT_HISTORY_MAX_BYTES`, or the limit stored for the namespace): the result is kept,
   * nothing of the history was appended.
   */
  HistoryLimitExceeded: 'history_limit_exceeded',

  // What the child's own run reports (spawn runtime, ACP agents, structured output).
  /** The model refused to answer (content filter or an agent's `refusal`). */
  Refusal: 'refusal',
  /** The model hit its output token limit. */
  MaxTokens: 'max_tokens',
  /** The model call failed in a way no more specific category covers. */
  ModelError: 'model_error',
  /** The model provider rate-limited the call (HTTP 429). */
  RateLimited: 'rate_limited',
  /** The model provider refused the credentials (HTTP 401/403). */
  AuthFailed: 'auth_failed',
  /** The model provider failed (HTTP 5xx). */
  ModelUnavailable: 'model_unavailable',
  /** The model provider rejected the request (other HTTP 4xx). */
  ModelRequestRejected: 'model_request_rejected',
  /** The model provider could not be reached. */
  TransportError: 'transport_error',
  /** The model's response stream ended before the step finished. */
  StreamInterrupted: 'stream_interrupted',
  /** The run used its whole step budget without finishing. */
  MaxStepsExceeded: 'max_steps_exceeded',
  /** A structured output was requested and the child never supplied one. */
  StructuredOutputMissing: 'structured_output_missing',
  /** The child's structured output does not satisfy the requested schema. */
  StructuredOutputInvalid: 'structured_output_invalid',
  /** The subagent's model is unknown, misnamed or not configured on this worker. */
  ModelConfig: 'model_config',
  /** The agent runtime broke an invariant of its own. */
  InternalError: 'internal_error',
  /** An ACP agent ended the turn because it made too many model requests. */
  MaxTurnRequests: 'max_turn_requests',
  /** An ACP agent's process exited while the prompt ran. */
  AgentProcessExited: 'agent_process_exited',
  /** An ACP agent's stdio connection closed while its process stayed up. */
  AgentConnectionClosed: 'agent_connection_closed',
  /** An ACP agent answered the prompt with a protocol error. */
  AgentRequestFailed: 'agent_request_failed',
} as const
export type FailureCategory = (typeof FailureCategory)[keyof typeof FailureCategory]

/** Every failure category, in declaration order. */
export const FAILURE_CATEGORIES = Object.values(FailureCategory) as readonly FailureCategory[]

export const failureCategorySchema = z.enum(FailureCategory)

const KNOWN: ReadonlySet<unknown> = new Set(FAILURE_CATEGORIES)

export function isFailureCategory(value: unknown): value is FailureCategory {
  return KNOWN.has(value)
}

/**
 * The cancel reason an attempt records when it is cancelled because a run above it was cancelled
 * with `cascade` (its failure category stays `cancelled`): it names the cascade and the run whose
 * cancel started it, for every attempt down the tree.
 */
export function cascadeCancelReason(runId: string): string {
  return `cascade: run ${runId} was cancelled`
}
