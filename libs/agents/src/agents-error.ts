/**
 * The typed failure model of @baton/agents. One code object, one base error; named subclasses only
 * where callers branch (a refused workspace path is shown to the model, not treated as a crash).
 */
export const AgentsErrorCode = {
  /** `resolveModel` got a model id whose prefix names no known provider. */
  UNKNOWN_MODEL_PROVIDER: 'UNKNOWN_MODEL_PROVIDER',
  /** A model id is malformed (no `<provider>:<model>` shape or an empty model name). */
  INVALID_MODEL_ID: 'INVALID_MODEL_ID',
  /** The provider named by a model id needs configuration (API key, base URL) that was not given. */
  MODEL_NOT_CONFIGURED: 'MODEL_NOT_CONFIGURED',
  /** `scripted:<name>` names no registered script. */
  UNKNOWN_SCRIPT: 'UNKNOWN_SCRIPT',
  INVALID_SCRIPT: 'INVALID_SCRIPT',
  /** A scripted model was called more times than its script has steps. */
  SCRIPT_EXHAUSTED: 'SCRIPT_EXHAUSTED',
  /** A scripted `fail` step: the deterministic stand-in for a model/transport failure. */
  SCRIPTED_FAILURE: 'SCRIPTED_FAILURE',
  /** A workspace tool was asked for a path outside the session's working directory. */
  WORKSPACE_PATH_REFUSED: 'WORKSPACE_PATH_REFUSED',
  /** An agent already runs a turn; one turn at a time per agent. */
  AGENT_BUSY: 'AGENT_BUSY',
  /** The agent was disposed; it accepts no more turns. */
  AGENT_DISPOSED: 'AGENT_DISPOSED',
  /** Steering was sent to a run that has already settled (use `resume` instead). */
  RUN_SETTLED: 'RUN_SETTLED',
  /** Fork needs the parent's session log, and this runtime does not hold it. */
  PARENT_SESSION_UNKNOWN: 'PARENT_SESSION_UNKNOWN',
  /** Start was cancelled by its request signal before the run was ready. */
  START_ABORTED: 'START_ABORTED',
  /**
   * A start request's `history` is not a resumable log (malformed event, seq gap, unfinished or
   * unbalanced turn); the message names the violation. Nothing was created.
   */
  INVALID_HISTORY: 'INVALID_HISTORY',
} as const
export type AgentsErrorCode = (typeof AgentsErrorCode)[keyof typeof AgentsErrorCode]

export interface AgentsErrorOptions {
  readonly retryable?: boolean
  readonly cause?: unknown
}

export class AgentsError extends Error {
  override readonly name: string = 'AgentsError'
  readonly code: AgentsErrorCode
  readonly retryable: boolean

  constructor(code: AgentsErrorCode, message: string, options: AgentsErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause })
    this.code = code
    this.retryable = options.retryable ?? false
  }
}

/** A workspace tool refused a path that escapes the session's working directory. */
export class WorkspacePathError extends AgentsError {
  override readonly name: string = 'WorkspacePathError'
  readonly requestedPath: string

  constructor(requestedPath: string, reason: string) {
    super(AgentsErrorCode.WORKSPACE_PATH_REFUSED, `Path "${requestedPath}" is refused: ${reason}.`)
    this.requestedPath = requestedPath
  }
}

export function isAgentsError(error: unknown): error is AgentsError {
  return error instanceof AgentsError
}
