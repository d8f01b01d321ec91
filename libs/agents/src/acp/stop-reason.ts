import { FailureCategory } from '@baton/contracts'
import type { SubagentStopReason } from '@baton/subagents'

export interface MappedStop {
  readonly stopReason: SubagentStopReason
  /** Present exactly when `stopReason` is not `completed`. */
  readonly failureCategory?: FailureCategory
}

/**
 * Maps an ACP `session/prompt` stop reason to the seam's vocabulary. Takes `string` rather than the
 * SDK union because the value comes from another process: anything unknown is a failure.
 */
export function mapAcpStopReason(reason: string): MappedStop {
  switch (reason) {
    case 'end_turn':
      return { stopReason: 'completed' }
    case 'cancelled':
      return { stopReason: 'aborted', failureCategory: FailureCategory.Cancelled }
    case 'max_tokens':
      return { stopReason: 'max-tokens', failureCategory: FailureCategory.MaxTokens }
    case 'refusal':
      return { stopReason: 'refusal', failureCategory: FailureCategory.Refusal }
    case 'max_turn_requests':
      return { stopReason: 'error', failureCategory: FailureCategory.MaxTurnRequests }
    default:
      return { stopReason: 'error', failureCategory: FailureCategory.UnknownStopReason }
  }
}
