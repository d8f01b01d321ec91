import {
  assertSupportedOutputSchema,
  childDepthFields,
  deriveChildDepth,
  SubagentError,
} from '@baton/subagents'
import type {
  SubagentCapabilities,
  SubagentHistoryEvent,
  SubagentProvider,
  SubagentStartRequest,
} from '@baton/subagents'
import { abortReason } from './abortable-delay.ts'
import { AgentsError, AgentsErrorCode } from './agents-error.ts'
import type { AgentRuntime } from './agent-runtime.ts'
import { createChildLease, createLocalSubagentRun } from './local-subagent-run.ts'
import { checkSessionLog, completedTurnPrefix } from './session-events.ts'
import type { SessionEvent } from './session-events.ts'

/** Spawn can also resume a child from a persisted conversation (`request.history`). */
export const SPAWN_PROVIDER_CAPABILITIES: SubagentCapabilities = Object.freeze({
  outputSchema: true,
  depthLimit: true,
  toolFilter: true,
  persona: true,
  history: true,
})

/** A fork's conversation is its parent's log, so it takes no other history. */
export const FORK_PROVIDER_CAPABILITIES: SubagentCapabilities = Object.freeze({
  ...SPAWN_PROVIDER_CAPABILITIES,
  history: false,
})

export interface LocalSubagentProviderOptions {
  readonly runtime: AgentRuntime
  /** Registry name; defaults to the mode (`spawn` or `fork`). */
  readonly name?: string
}

/**
 * The in-process providers. `spawn` starts a child with an empty conversation, or with
 * `request.history` (validated before anything is created); `fork` seeds it with the parent's
 * balanced completed-turn prefix. Either way the child is a new agent with its own
 * flat toolset, cwd inherited from the parent header, and depth parent + 1.
 */
export function createLocalSubagentProvider(
  mode: 'spawn' | 'fork',
  options: LocalSubagentProviderOptions,
): SubagentProvider {
  const { runtime } = options
  const name = options.name ?? mode
  return {
    name,
    capabilities: mode === 'fork' ? FORK_PROVIDER_CAPABILITIES : SPAWN_PROVIDER_CAPABILITIES,
    inheritsParentContext: mode === 'fork',
    async start(request: SubagentStartRequest) {
      throwIfStartAborted(request.signal)
      const depth = deriveChildDepth(request.parent, request.maxDepth)
      if (request.outputSchema !== undefined) assertSupportedOutputSchema(request.outputSchema)
      if (mode === 'fork' && request.history !== undefined) {
        // The service refuses this already; a caller bypassing it must not lose the history silently.
        throw new SubagentError(
          'UNSUPPORTED_CAPABILITY',
          `Subagent provider "${name}" does not support: history. A fork continues its parent's log.`,
          { details: { provider: name, missing: ['history'] } },
        )
      }
      const seed = mode === 'fork' ? forkSeed(runtime, request) : historySeed(request.history)
      const model = request.agentOptions?.model ?? request.parent.options.model
      const fields = childDepthFields(depth)

      const child = await runtime.createAgent({
        cwd: request.parent.session.header.cwd,
        parentSession: request.parent.session.id,
        delegationDepth: fields.delegationDepth,
        options: {
          ...request.agentOptions,
          ...(model === undefined ? {} : { model }),
          subagentDepth: fields.subagentDepth,
        },
        ...(seed === undefined ? {} : { seed }),
        ...(request.persona === undefined ? {} : { persona: request.persona }),
        ...(request.toolFilter === undefined ? {} : { toolFilter: request.toolFilter }),
        signal: request.signal,
      })
      // Published. Until this promise fulfils the provider still owns the child, so a late abort
      // disposes it here rather than handing the caller a run it did not get.
      if (request.signal.aborted) {
        await child.dispose()
        throwIfStartAborted(request.signal)
      }
      return createLocalSubagentRun({
        child,
        lease: createChildLease(child),
        prompt: request.prompt,
        signal: request.signal,
        ...(request.outputSchema === undefined ? {} : { outputSchema: request.outputSchema }),
      })
    },
  }
}

export function createSpawnProvider(options: LocalSubagentProviderOptions): SubagentProvider {
  return createLocalSubagentProvider('spawn', options)
}

export function createForkProvider(options: LocalSubagentProviderOptions): SubagentProvider {
  return createLocalSubagentProvider('fork', options)
}

function forkSeed(runtime: AgentRuntime, request: SubagentStartRequest): SessionEvent[] {
  const parent = runtime.getAgent(request.parent.session.id)
  if (parent === undefined) {
    throw new AgentsError(
      AgentsErrorCode.PARENT_SESSION_UNKNOWN,
      `Cannot fork session ${request.parent.session.id}: this runtime holds no log for it.`,
    )
  }
  return completedTurnPrefix(parent.session.events())
}

/** A persisted conversation becomes the child's seed only if it is a valid balanced log. */
function historySeed(
  history: readonly SubagentHistoryEvent[] | undefined,
): SessionEvent[] | undefined {
  if (history === undefined) return undefined
  const checked = checkSessionLog(history)
  if (!checked.ok) {
    throw new AgentsError(
      AgentsErrorCode.INVALID_HISTORY,
      `Cannot resume from this history: ${checked.reason}.`,
    )
  }
  return checked.events
}

function throwIfStartAborted(signal: AbortSignal): void {
  if (signal.aborted) {
    throw new AgentsError(
      AgentsErrorCode.START_ABORTED,
      'Subagent start was cancelled before the run was ready.',
      {
        cause: abortReason(signal),
      },
    )
  }
}
