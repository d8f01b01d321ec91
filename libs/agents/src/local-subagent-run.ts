import type {
  ContentBlock,
  StructuredOutputSchema,
  SubagentResult,
  SubagentRun,
} from '@baton/subagents'
import { AgentsError, AgentsErrorCode } from './agents-error.ts'
import type { LocalAgent } from './agent-runtime.ts'
import type { AgentOutcome } from './run-agent.ts'

/**
 * Shared ownership of a child across its runs: a resumed run continues the same child, so the
 * child is disposed only when the last run holding it is disposed.
 */
export interface ChildLease {
  acquire(): () => Promise<void>
}

export function createChildLease(child: LocalAgent): ChildLease {
  let holders = 0
  return {
    acquire() {
      holders += 1
      let released = false
      return async () => {
        if (released) return
        released = true
        holders -= 1
        if (holders === 0) await child.dispose()
      }
    },
  }
}

export interface LocalSubagentRunInit {
  readonly child: LocalAgent
  readonly lease: ChildLease
  readonly prompt: readonly ContentBlock[]
  /** The start request's signal for the first run; a resumed run is cancelled by dispose alone. */
  readonly signal?: AbortSignal
  readonly outputSchema?: StructuredOutputSchema
}

/**
 * A run handle over one turn of a published in-process child. Its id is the child session id;
 * `history()` is the child's whole session log, so a resumed run sees earlier turns too.
 */
export function createLocalSubagentRun(init: LocalSubagentRunInit): SubagentRun {
  const { child } = init
  const release = init.lease.acquire()
  const turn = child.runTurn(init.prompt, {
    ...(init.signal === undefined ? {} : { signal: init.signal }),
    ...(init.outputSchema === undefined ? {} : { outputSchema: init.outputSchema }),
  })
  let disposing: Promise<void> | undefined

  return {
    id: child.session.id,
    localAgent: child,
    result: turn.outcome.then(toSubagentResult),
    dispose() {
      disposing ??= (async () => {
        turn.abort(new DOMException('The run was disposed.', 'AbortError'))
        await turn.outcome.catch(() => undefined)
        await release()
      })()
      return disposing
    },
    sendMessage(content) {
      turn.steer(content)
    },
    resume(content) {
      if (disposing !== undefined) {
        return Promise.reject(
          new AgentsError(
            AgentsErrorCode.AGENT_DISPOSED,
            `Run ${child.session.id} is disposed; it cannot be resumed.`,
          ),
        )
      }
      if (!turn.settled) {
        return Promise.reject(
          new AgentsError(
            AgentsErrorCode.AGENT_BUSY,
            `Run ${child.session.id} has not settled; steer it instead.`,
          ),
        )
      }
      // The child keeps its header, so the resumed run runs at the same (never lower) depth.
      return Promise.resolve(
        createLocalSubagentRun({
          child,
          lease: init.lease,
          prompt: content,
          ...(init.outputSchema === undefined ? {} : { outputSchema: init.outputSchema }),
        }),
      )
    },
    history: () => child.session.events(),
  }
}

function toSubagentResult(outcome: AgentOutcome): SubagentResult {
  return {
    output: outcome.output,
    stopReason: outcome.stopReason,
    ...(outcome.failureCategory === undefined ? {} : { failureCategory: outcome.failureCategory }),
    ...('structured' in outcome ? { structured: outcome.structured } : {}),
    usage: { inputTokens: outcome.usage.inputTokens, outputTokens: outcome.usage.outputTokens },
  }
}
