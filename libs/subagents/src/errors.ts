/**
 * The one error type of the subagent seam. Every refusal the seam makes — before a run exists or
 * while delegating at the SDK level — is a `SubagentError` with a code from `SubagentErrorCode`, so
 * callers branch on `code` instead of parsing messages. None of these are retryable: each names a
 * configuration or request the caller must change.
 */
export const SubagentErrorCode = {
  /** The request needs a start-time capability the chosen provider does not advertise. */
  UNSUPPORTED_CAPABILITY: 'UNSUPPORTED_CAPABILITY',
  /** No provider was ever registered under the requested name. */
  UNKNOWN_PROVIDER: 'UNKNOWN_PROVIDER',
  /** A provider name is already taken; names are unique in one service. */
  DUPLICATE_PROVIDER: 'DUPLICATE_PROVIDER',
  /** The provider was registered and then removed; new starts are refused. */
  PROVIDER_REMOVED: 'PROVIDER_REMOVED',
  /** A depth value (durable, runtime, derived or `maxDepth`) is not a non-negative safe integer. */
  INVALID_DEPTH: 'INVALID_DEPTH',
  /** The child's derived depth is above the request's `maxDepth`. */
  DEPTH_EXCEEDED: 'DEPTH_EXCEEDED',
  /** The output schema is outside the supported object-rooted subset. */
  UNSUPPORTED_SCHEMA: 'UNSUPPORTED_SCHEMA',
  /** A tool filter names a tool that does not exist. */
  UNKNOWN_TOOL: 'UNKNOWN_TOOL',
  /** A persona template references a variable that is not registered. */
  UNKNOWN_PERSONA_VARIABLE: 'UNKNOWN_PERSONA_VARIABLE',
  /** No subagent is registered under the requested name. */
  UNKNOWN_SUBAGENT: 'UNKNOWN_SUBAGENT',
  /** Two subagents (registry entries or markdown files) share one name. */
  DUPLICATE_SUBAGENT: 'DUPLICATE_SUBAGENT',
  /** A subagent tried to delegate without having opted into nested delegation. */
  NESTED_DELEGATION_DENIED: 'NESTED_DELEGATION_DENIED',
  /** A required tool is denied (explicitly or as main-agent-only), so the subagent is unavailable. */
  DENIED_REQUIRED_TOOL: 'DENIED_REQUIRED_TOOL',
  /** A required tool is absent from the parent's tools, so the subagent is unavailable. */
  MISSING_REQUIRED_TOOL: 'MISSING_REQUIRED_TOOL',
  /** A subagent spec (markdown file or frontmatter) is malformed. */
  INVALID_SPEC: 'INVALID_SPEC',
  /** A profiles file (TOML) is malformed or names something that does not exist. */
  INVALID_PROFILES: 'INVALID_PROFILES',
  /** The spec inherits its model but the host supplied no concrete model id. */
  INHERITED_MODEL_REQUIRED: 'INHERITED_MODEL_REQUIRED',
  /** Delegation was requested while the delegation mode is `disabled`. */
  DELEGATION_DISABLED: 'DELEGATION_DISABLED',
  /** A model-facing delegation tool received input that does not match its schema. */
  INVALID_TOOL_INPUT: 'INVALID_TOOL_INPUT',
} as const
export type SubagentErrorCode = (typeof SubagentErrorCode)[keyof typeof SubagentErrorCode]

export interface SubagentErrorOptions {
  readonly cause?: unknown
  /** Structured, safe-to-expose details (e.g. the missing capabilities, the offending tool name). */
  readonly details?: Readonly<Record<string, unknown>>
}

export class SubagentError extends Error {
  override readonly name = 'SubagentError'
  readonly code: SubagentErrorCode
  /** Always false: every code names something the caller must change, not a transient fault. */
  readonly retryable = false
  readonly details: Readonly<Record<string, unknown>> | undefined

  constructor(code: SubagentErrorCode, message: string, options: SubagentErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause })
    this.code = code
    this.details = options.details
  }
}

/** Narrow an unknown failure to a `SubagentError`, optionally of one code. */
export function isSubagentError(error: unknown, code?: SubagentErrorCode): error is SubagentError {
  return error instanceof SubagentError && (code === undefined || error.code === code)
}
