import { BatonApiError } from '@baton/client'
import { ErrorCode, isTerminalView, type AnyAttemptView } from '@baton/contracts'
import { OutputFileError } from './output-file.ts'

/** The exit codes of `baton`, documented in the README's "CLI" section. */
export const ExitCode = {
  /** A terminal `completed` attempt, or the command's action was accepted. */
  Ok: 0,
  /** The attempt ended, but not `completed` (aborted, error, refusal, max-tokens). */
  NotCompleted: 1,
  /** Bad flags or arguments; nothing was sent. */
  Usage: 2,
  /** The API answered with an error (4xx/5xx). */
  ApiError: 3,
  /**
   * A bounded wait ended with nothing: the attempt was not terminal yet, or no continuation
   * arrived to claim.
   */
  WaitExpired: 4,
  /** The API could not be reached (refused, unresolvable, or no answer in time). */
  Unreachable: 5,
  /** An artifact's bytes do not match its digest (stored or received); nothing was written. */
  Integrity: 6,
  /** The file given to write to could not be written. */
  OutputFailed: 7,
} as const
export type ExitCode = (typeof ExitCode)[keyof typeof ExitCode]

/** The exit code of a wait's answer: the attempt's own outcome, or that the bound expired. */
export function exitCodeOfView(view: AnyAttemptView): ExitCode {
  if (!isTerminalView(view)) return ExitCode.WaitExpired
  return view.stopReason === 'completed' ? ExitCode.Ok : ExitCode.NotCompleted
}

/**
 * A failed command's exit code and the line that explains it, or `undefined` for an error that is
 * neither about the API nor about a file the user named (a bug, which the caller lets surface with
 * its stack). An error answer is the API speaking; anything fetch throws (refused, unresolvable,
 * cut by the call's own timeout) means it did not.
 */
export function describeFailure(
  error: unknown,
  baseUrl: string,
): { readonly exitCode: ExitCode; readonly message: string } | undefined {
  if (error instanceof OutputFileError) {
    return { exitCode: ExitCode.OutputFailed, message: error.message }
  }
  if (error instanceof BatonApiError) {
    return {
      exitCode: error.code === ErrorCode.ArtifactIntegrity ? ExitCode.Integrity : ExitCode.ApiError,
      message: `${error.code} (HTTP ${error.status}): ${error.message}${
        error.status === 401 ? ' (set BATON_API_KEY, or pass --api-key)' : ''
      }`,
    }
  }
  if (!(error instanceof Error)) return undefined
  if (error.name === 'TimeoutError' || error.name === 'AbortError') {
    return { exitCode: ExitCode.Unreachable, message: `no answer from ${baseUrl} in time` }
  }
  if (error instanceof TypeError && error.message === 'fetch failed') {
    const cause = error.cause instanceof Error ? `: ${error.cause.message}` : ''
    return { exitCode: ExitCode.Unreachable, message: `cannot reach ${baseUrl}${cause}` }
  }
  return undefined
}
