import { APICallError } from 'ai'
import { FailureCategory } from '@baton/contracts'
import { AgentsError, AgentsErrorCode } from './agents-error.ts'

/** Classify an error thrown by a model call or the loop into Baton's durable failure set. */
export function categorizeFailure(error: unknown): FailureCategory {
  if (isAbortError(error)) return FailureCategory.Cancelled
  if (APICallError.isInstance(error)) {
    const status = error.statusCode
    if (status === 429) return FailureCategory.RateLimited
    if (status === 401 || status === 403) return FailureCategory.AuthFailed
    if (status !== undefined && status >= 500) return FailureCategory.ModelUnavailable
    if (status !== undefined && status >= 400) return FailureCategory.ModelRequestRejected
    return FailureCategory.TransportError
  }
  if (error instanceof AgentsError) {
    switch (error.code) {
      case AgentsErrorCode.SCRIPTED_FAILURE:
      case AgentsErrorCode.SCRIPT_EXHAUSTED:
        return FailureCategory.ModelError
      case AgentsErrorCode.START_ABORTED:
        return FailureCategory.Cancelled
      case AgentsErrorCode.UNKNOWN_MODEL_PROVIDER:
      case AgentsErrorCode.INVALID_MODEL_ID:
      case AgentsErrorCode.MODEL_NOT_CONFIGURED:
      case AgentsErrorCode.UNKNOWN_SCRIPT:
      case AgentsErrorCode.INVALID_SCRIPT:
        return FailureCategory.ModelConfig
      case AgentsErrorCode.WORKSPACE_PATH_REFUSED:
      case AgentsErrorCode.AGENT_BUSY:
      case AgentsErrorCode.AGENT_DISPOSED:
      case AgentsErrorCode.RUN_SETTLED:
      case AgentsErrorCode.PARENT_SESSION_UNKNOWN:
      case AgentsErrorCode.INVALID_HISTORY:
        return FailureCategory.InternalError
    }
  }
  if (error instanceof TypeError && /fetch|network|socket/i.test(error.message))
    return FailureCategory.TransportError
  return FailureCategory.ModelError
}

export function isAbortError(error: unknown): boolean {
  return error instanceof Error && (error.name === 'AbortError' || error.name === 'TimeoutError')
}
