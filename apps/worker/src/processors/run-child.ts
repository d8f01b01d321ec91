import { FailureCategory, STOP_REASONS, promptToBlocks, type Prompt } from '@baton/contracts'
import type { SubagentResult, SubagentRun } from '@baton/subagents'
import type { ClaimedAttempt, TerminalResultInput } from '@baton/store'
import type { SubagentEntry, WorkerSubagents } from '../subagents/subagent-catalog.ts'

const KNOWN_STOP_REASONS: ReadonlySet<string> = new Set(STOP_REASONS)

/**
 * Runs one child through the subagent service (which checks the entry's start-time capabilities
 * against its provider first) and reduces whatever happens to a terminal result the ledger can
 * record. The attempt's AbortSignal is the request signal. Child failures arrive as stop reasons;
 * a start that is refused or a provider that throws (an infrastructure fault) becomes `error`
 * with a safe category, never a message or stack trace.
 */
export async function runChild(
  subagents: WorkerSubagents,
  entry: SubagentEntry,
  attempt: ClaimedAttempt,
  signal: AbortSignal,
  workspaceDir: string,
  /** Called once the run is ready (steering delivery attaches here). */
  onRun: (run: SubagentRun) => void = () => {},
): Promise<TerminalResultInput> {
  let result: SubagentResult
  try {
    const run = await subagents.service.start(entry.provider, {
      prompt: promptToBlocks(attempt.prompt as Prompt),
      parent: {
        session: {
          id: attempt.sessionId,
          header: { id: attempt.sessionId, cwd: workspaceDir, delegationDepth: 0 },
        },
        options: {},
      },
      signal,
      ...(entry.agentOptions === undefined ? {} : { agentOptions: entry.agentOptions }),
      ...(entry.persona === undefined ? {} : { persona: entry.persona }),
      ...(entry.toolFilter === undefined ? {} : { toolFilter: entry.toolFilter }),
    })
    try {
      onRun(run)
      result = await run.result
    } finally {
      await run.dispose()
    }
  } catch {
    if (signal.aborted)
      return { stopReason: 'aborted', output: '', failureCategory: FailureCategory.Cancelled }
    return { stopReason: 'error', output: '', failureCategory: FailureCategory.ProviderFault }
  }
  return toTerminalResult(result)
}

export function toTerminalResult(result: SubagentResult): TerminalResultInput {
  const output = result.output.map((b) => b.text).join('')
  if (!KNOWN_STOP_REASONS.has(result.stopReason)) {
    // Seed 003: an unknown terminal reason is a failure.
    return { stopReason: 'error', output, failureCategory: FailureCategory.UnknownStopReason }
  }
  const failureCategory =
    result.stopReason === 'completed'
      ? null
      : (result.failureCategory ?? defaultCategory(result.stopReason))
  return { stopReason: result.stopReason, output, failureCategory }
}

function defaultCategory(stopReason: string): string {
  switch (stopReason) {
    case 'aborted':
      return FailureCategory.Cancelled
    case 'max-tokens':
      return 'max_tokens'
    case 'refusal':
      return 'refusal'
    default:
      return FailureCategory.ChildFailed
  }
}
