import { FailureCategory, promptToBlocks, type Prompt } from '@baton/contracts'
import { historySuffix } from '@baton/agents'
import type { SubagentHistoryEvent, SubagentResult, SubagentRun } from '@baton/subagents'
import type { Logger } from '@baton/observability'
import type { ClaimedAttempt, HistoryDelta, TerminalResultInput } from '@baton/store'
import type { OutputHold } from '../output-budget.ts'
import type { SubagentEntry, WorkerSubagents } from '../subagents/subagent-catalog.ts'
import { durableOutcome } from './durable-outcome.ts'

export interface RunChildOptions {
  /** The attempt's AbortSignal: the child's request signal. */
  readonly signal: AbortSignal
  readonly workspaceDir: string
  /** The agent's durable history to resume from; empty for a new agent. */
  readonly history: readonly SubagentHistoryEvent[]
  /** Told why a child's history or its failure category was rejected. */
  readonly logger: Logger
  /** Called once the run is ready (steering delivery attaches here). */
  readonly onRun?: (run: SubagentRun) => void
  /** The attempt's share of the worker's output memory budget; the caller releases it. */
  readonly outputHold: OutputHold
}

/**
 * The start was aborted before its run was ready: no child ran (a provider's `start` rejects then,
 * leaving nothing running), so there is nothing to record for it.
 */
export const NOT_STARTED: unique symbol = Symbol('not started')

/**
 * Runs one child through the subagent service (which checks the entry's start-time capabilities
 * against its provider first) and reduces whatever happens to a terminal result the ledger can
 * record. Child failures arrive as stop reasons; a start that is refused or a provider that throws
 * (an infrastructure fault) becomes `error` with a safe category, never a message or stack trace.
 *
 * A continuation is resumed from its agent's durable history. A run that reports its own history
 * contributes only the validated suffix it added after that history, as the result's context
 * delta; a run whose log does not extend the history it was given fails closed (`error`,
 * `context_rejected`) and contributes nothing.
 */
export async function runChild(
  subagents: WorkerSubagents,
  entry: SubagentEntry,
  attempt: ClaimedAttempt,
  options: RunChildOptions,
): Promise<TerminalResultInput | typeof NOT_STARTED> {
  const { signal, history } = options
  let result: SubagentResult
  let log: readonly SubagentHistoryEvent[] | undefined
  let run: SubagentRun
  try {
    run = await subagents.service.start(entry.provider, {
      prompt: promptToBlocks(attempt.prompt as Prompt),
      parent: {
        session: {
          id: attempt.sessionId,
          header: { id: attempt.sessionId, cwd: options.workspaceDir, delegationDepth: 0 },
        },
        options: {},
      },
      signal,
      outputBudget: options.outputHold,
      ...(history.length === 0 ? {} : { history }),
      ...(entry.agentOptions === undefined ? {} : { agentOptions: entry.agentOptions }),
      ...(entry.persona === undefined ? {} : { persona: entry.persona }),
      ...(entry.toolFilter === undefined ? {} : { toolFilter: entry.toolFilter }),
    })
  } catch {
    // Aborted before its run was ready: by the seam's contract, no child ran.
    if (signal.aborted) return NOT_STARTED
    return { stopReason: 'error', output: '', failureCategory: FailureCategory.ProviderFault }
  }
  try {
    try {
      options.onRun?.(run)
      result = await run.result
      log = run.history?.()
    } finally {
      await disposeWithin(run, DISPOSE_TIMEOUT_MS, options.logger)
    }
  } catch {
    // An aborted result's category is replaced by its abort reason's (see the attempt processor).
    if (signal.aborted)
      return { stopReason: 'aborted', output: '', failureCategory: FailureCategory.Cancelled }
    return { stopReason: 'error', output: '', failureCategory: FailureCategory.ProviderFault }
  }
  const outputBytes = result.output.reduce((sum, b) => sum + Buffer.byteLength(b.text), 0)
  if (!options.outputHold.holdAtLeast(outputBytes)) {
    options.logger.warn(
      { outputBytes, heldBytes: options.outputHold.heldBytes },
      "the child's output does not fit in the worker's output memory budget; keeping none of it",
    )
    return {
      stopReason: 'error',
      output: '',
      failureCategory: FailureCategory.OutputBudgetExceeded,
    }
  }
  const terminal = {
    output: result.output.map((b) => b.text).join(''),
    ...durableOutcome(result, { subagent: attempt.name, logger: options.logger }),
    ...(result.usage === undefined
      ? {}
      : { usageTokens: result.usage.inputTokens + result.usage.outputTokens }),
  }
  if (log === undefined) return terminal
  const delta = historyDelta(history, log)
  if (delta !== undefined && 'rejected' in delta) {
    options.logger.warn(
      { reason: delta.rejected },
      "the child's history does not extend the history it resumed; appending nothing",
    )
    return {
      stopReason: 'error',
      output: terminal.output,
      failureCategory: FailureCategory.ContextRejected,
    }
  }
  return delta === undefined ? terminal : { ...terminal, history: delta }
}

/**
 * How long a run's `dispose()` may take before its result is committed without waiting for it. A
 * provider's cleanup (killing an agent process after its grace, closing its connections) fits
 * well within it.
 */
export const DISPOSE_TIMEOUT_MS = 5_000

/**
 * Disposes of a run, waiting at most `timeoutMs`: a provider whose `dispose()` hangs must not hold
 * a finished result back from its commit (nor its job slot) forever. The dispose goes on, and a
 * failure of it is only logged: the result is what the child returned.
 */
async function disposeWithin(run: SubagentRun, timeoutMs: number, logger: Logger): Promise<void> {
  let timer: NodeJS.Timeout | undefined
  const disposed = run.dispose().then(
    () => 'disposed' as const,
    (error: unknown) => {
      logger.warn({ err: error }, "the child's dispose failed")
      return 'disposed' as const
    },
  )
  const late = new Promise<'late'>((resolve) => {
    timer = setTimeout(() => resolve('late'), timeoutMs)
  })
  const outcome = await Promise.race([disposed, late])
  clearTimeout(timer)
  if (outcome === 'late')
    logger.warn({ timeoutMs }, "the child's dispose did not finish in time; going on without it")
}

/**
 * What a run's log adds to the history it was resumed from: the validated suffix, as the JSON the
 * ledger will store and a later resume will read back (so the fingerprint covers exactly that);
 * `undefined` when it added nothing, `rejected` (with the reason) when the log does not extend the
 * history or is not plain JSON.
 */
function historyDelta(
  history: readonly SubagentHistoryEvent[],
  log: readonly SubagentHistoryEvent[],
): HistoryDelta | { readonly rejected: string } | undefined {
  try {
    const checked = historySuffix(history, log)
    if (!checked.ok) return { rejected: checked.reason }
    if (checked.suffix.length === 0) return undefined
    const events = JSON.parse(JSON.stringify(checked.suffix)) as unknown[]
    return { baseSeq: history.length, events }
  } catch (error) {
    // canonicalJson or JSON.stringify refused a value (a cycle, a BigInt, a non-finite number).
    return { rejected: `the log is not plain JSON: ${String(error)}` }
  }
}
