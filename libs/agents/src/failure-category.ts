import { APICallError } from 'ai'
import { AgentsError, AgentsErrorCode } from './agents-error.ts'

/**
 * Safe public failure categories. This is what leaves the library when a run fails: a category a
 * consumer can branch on and show, never a message or stack that might carry prompts or secrets.
 */
export const FailureCategory = {
  ABORTED: 'aborted',
  MODEL_ERROR: 'model_error',
  RATE_LIMITED: 'rate_limited',
  AUTH_FAILED: 'auth_failed',
  MODEL_UNAVAILABLE: 'model_unavailable',
  MODEL_REQUEST_REJECTED: 'model_request_rejected',
  TRANSPORT_ERROR: 'transport_error',
  STREAM_INTERRUPTED: 'stream_interrupted',
  MAX_STEPS_EXCEEDED: 'max_steps_exceeded',
  STRUCTURED_OUTPUT_MISSING: 'structured_output_missing',
  REFUSED: 'refused',
  MAX_TOKENS: 'max_tokens',
  MODEL_CONFIG: 'model_config',
  INTERNAL_ERROR: 'internal_error',
} as const
export type FailureCategory = (typeof FailureCategory)[keyof typeof FailureCategory]

/** Classify an error thrown by a model call or the loop into a safe category. */
export function categorizeFailure(error: unknown): FailureCategory {
  if (isAbortError(error)) return FailureCategory.ABORTED
  if (APICallError.isInstance(error)) {
    const status = error.statusCode
    if (status === 429) return FailureCategory.RATE_LIMITED
    if (status === 401 || status === 403) return FailureCategory.AUTH_FAILED
    if (status !== undefined && status >= 500) return FailureCategory.MODEL_UNAVAILABLE
    if (status !== undefined && status >= 400) return FailureCategory.MODEL_REQUEST_REJECTED
    return FailureCategory.TRANSPORT_ERROR
  }
  if (error instanceof AgentsError) {
    switch (error.code) {
      case AgentsErrorCode.SCRIPTED_FAILURE:
      case AgentsErrorCode.SCRIPT_EXHAUSTED:
        return FailureCategory.MODEL_ERROR
      case AgentsErrorCode.START_ABORTED:
        return FailureCategory.ABORTED
      case AgentsErrorCode.UNKNOWN_MODEL_PROVIDER:
      case AgentsErrorCode.INVALID_MODEL_ID:
      case AgentsErrorCode.MODEL_NOT_CONFIGURED:
      case AgentsErrorCode.UNKNOWN_SCRIPT:
      case AgentsErrorCode.INVALID_SCRIPT:
        return FailureCategory.MODEL_CONFIG
      case AgentsErrorCode.WORKSPACE_PATH_REFUSED:
      case AgentsErrorCode.AGENT_BUSY:
      case AgentsErrorCode.AGENT_DISPOSED:
      case AgentsErrorCode.RUN_SETTLED:
      case AgentsErrorCode.PARENT_SESSION_UNKNOWN:
      case AgentsErrorCode.INVALID_HISTORY:
        return FailureCategory.INTERNAL_ERROR
    }
  }
  if (error instanceof TypeError && /fetch|network|socket/i.test(error.message))
    return FailureCategory.TRANSPORT_ERROR
  return FailureCategory.MODEL_ERROR
}

export function isAbortError(error: unknown): boolean {
  return error instanceof Error && (error.name === 'AbortError' || error.name === 'TimeoutError')
}
