import { FailureCategory, STOP_REASONS, isFailureCategory, type StopReason } from '@baton/contracts'
import type { Logger } from '@baton/observability'

/** How much of a refused category a warning shows: enough to recognise it, never a dump. */
const LOGGED_CATEGORY_CHARS = 64

const KNOWN_STOP_REASONS: ReadonlySet<unknown> = new Set(STOP_REASONS)

/** What a child run returns, as untrusted as the seam allows (third-party providers). */
export interface ChildEnd {
  readonly stopReason: string
  readonly failureCategory?: unknown
}

/** Who produced the result, for the warning when its category is refused. */
export interface ChildSource {
  readonly subagent: string
  readonly logger: Logger
}

export interface DurableOutcome {
  readonly stopReason: StopReason
  readonly failureCategory: FailureCategory | null
}

/**
 * The one mapping from what a child run returns into the durable vocabulary. A known category
 * passes through; an unknown stop reason is a failure (seed 003); a non-completed run that names no
 * category gets its stop reason's; anything else a provider declares (unknown, over-long, not a
 * string) becomes `provider_fault` and a warning naming the subagent, because a free string in the
 * ledger would split one concept across spellings and could carry text that must not be stored.
 */
export function durableOutcome(end: ChildEnd, source: ChildSource): DurableOutcome {
  if (!isStopReason(end.stopReason))
    return { stopReason: 'error', failureCategory: FailureCategory.UnknownStopReason }
  const stopReason = end.stopReason
  switch (stopReason) {
    case 'completed':
      return { stopReason, failureCategory: null }
    case 'aborted':
    case 'error':
    case 'max-tokens':
    case 'refusal':
      return {
        stopReason,
        failureCategory:
          end.failureCategory === undefined
            ? defaultCategory(stopReason)
            : declaredCategory(end.failureCategory, source),
      }
    default: {
      const never: never = stopReason
      throw new Error(`unhandled stop reason ${String(never)}`)
    }
  }
}

function defaultCategory(stopReason: Exclude<StopReason, 'completed'>): FailureCategory {
  switch (stopReason) {
    case 'aborted':
      return FailureCategory.Cancelled
    case 'error':
      return FailureCategory.ChildFailed
    case 'max-tokens':
      return FailureCategory.MaxTokens
    case 'refusal':
      return FailureCategory.Refusal
    default: {
      const never: never = stopReason
      throw new Error(`unhandled stop reason ${String(never)}`)
    }
  }
}

function declaredCategory(declared: unknown, source: ChildSource): FailureCategory {
  if (isFailureCategory(declared)) return declared
  source.logger.warn(
    { subagent: source.subagent, declared: describeDeclared(declared) },
    'subagent declared a failure category outside the durable set; storing provider_fault',
  )
  return FailureCategory.ProviderFault
}

/** The refused value as a log may show it: short strings whole, long ones cut, others by type. */
function describeDeclared(declared: unknown): Record<string, unknown> {
  if (typeof declared !== 'string') return { type: declared === null ? 'null' : typeof declared }
  if (declared.length <= LOGGED_CATEGORY_CHARS) return { type: 'string', value: declared }
  return {
    type: 'string',
    length: declared.length,
    prefix: declared.slice(0, LOGGED_CATEGORY_CHARS),
  }
}

function isStopReason(value: string): value is StopReason {
  return KNOWN_STOP_REASONS.has(value)
}
