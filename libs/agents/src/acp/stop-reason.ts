import type { SubagentStopReason } from '@baton/subagents'
import { AcpFailureCategory } from './errors.ts'

export interface MappedStop {
  readonly stopReason: SubagentStopReason
  /** Present exactly when `stopReason` is not `completed`. */
  readonly failureCategory?: AcpFailureCategory
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
      return { stopReason: 'aborted', failureCategory: AcpFailureCategory.Cancelled }
    case 'max_tokens':
      return { stopReason: 'max-tokens', failureCategory: AcpFailureCategory.MaxTokens }
    case 'refusal':
      return { stopReason: 'refusal', failureCategory: AcpFailureCategory.Refusal }
    case 'max_turn_requests':
      return { stopReason: 'error', failureCategory: AcpFailureCategory.MaxTurnRequests }
    default:
      return { stopReason: 'error', failureCategory: AcpFailureCategory.UnknownStopReason }
  }
}
