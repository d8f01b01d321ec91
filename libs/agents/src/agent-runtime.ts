import { randomUUID } from 'node:crypto'
import { experimental_createSteering } from 'ai'
import type { ToolSet } from 'ai'
import { FailureCategory } from '@baton/contracts'
import { applyToolFilter, interpolatePersona } from '@baton/subagents'
import type {
  Agent,
  AgentOptions,
  ContentBlock,
  SessionHeader,
  SessionId,
  StructuredOutputSchema,
  ToolRestriction,
} from '@baton/subagents'
import { abortReason } from './abortable-delay.ts'
import { AgentsError, AgentsErrorCode } from './agents-error.ts'
import { createCaptureToolBinding } from './capture-tool.ts'
import type { LanguageModelV4 } from './language-model.ts'
import { promptText, runAgent } from './run-agent.ts'
import type { AgentLoopEvent, AgentOutcome } from './run-agent.ts'
import { messagesOf, seedViolation } from './session-events.ts'
import type { SessionEvent } from './session-events.ts'
import { createWorkspaceTools } from './workspace-tools.ts'

/** What a toolset factory knows about the agent it equips. */
export interface ToolScope {
  readonly sessionId: SessionId
  readonly cwd: string
  readonly signal: AbortSignal | undefined
  /** The agent's options (its model, and any extension its host put there). */
  readonly options: AgentOptions
}

export interface AgentRuntimeOptions {
  /** Model id → model; usually `(id) => resolveModel(id, config)`, a fixed mock in tests. */
  readonly resolveModel: (modelId: string) => LanguageModelV4
  /** Model id used when neither the agent options nor the parent name one. */
  readonly defaultModel: string
  /** Deployment instructions, the first system-prompt section of every agent. */
  readonly system?: string
  /** Deployment persona; a child's own persona shadows it for that child alone. */
  readonly persona?: string
  /** Variables a persona template may reference as `{{name}}` (`cwd` is always available). */
  readonly personaVariables?: Readonly<Record<string, string>>
  /** Builds each agent's own flat toolset. Default: the read-only workspace tools. */
  readonly tools?: (scope: ToolScope) => ToolSet | Promise<ToolSet>
  /** Model calls per turn. Default 20. */
  readonly maxSteps?: number
  readonly maxRetries?: number
  readonly generateId?: () => string
}

export interface CreateAgentOptions {
  readonly cwd: string
  readonly parentSession?: SessionId
  readonly delegationDepth?: number
  readonly options?: AgentOptions
  /** A balanced completed-turn prefix to start from (fork); validated before adoption. */
  readonly seed?: readonly SessionEvent[]
  readonly persona?: string
  readonly toolFilter?: ToolRestriction
  /** Cancels creation; an abort before the agent is returned leaves nothing published. */
  readonly signal?: AbortSignal
}

export interface LocalSession {
  readonly id: SessionId
  readonly header: SessionHeader
  /** A snapshot of the session log. */
  events(): readonly SessionEvent[]
}

export interface TurnOptions {
  readonly signal?: AbortSignal
  readonly outputSchema?: StructuredOutputSchema
}

/** One running turn. `outcome` resolves for every child-level failure. */
export interface AgentTurn {
  readonly outcome: Promise<AgentOutcome>
  readonly settled: boolean
  /** Add a user message at the next step boundary. Throws RUN_SETTLED once the turn is over. */
  steer(content: readonly ContentBlock[]): void
  abort(reason?: unknown): void
}

/** An in-process agent: the seam's `Agent` plus a session log, turns and disposal. */
export interface LocalAgent extends Agent {
  readonly session: LocalSession
  readonly options: AgentOptions
  readonly system: string | undefined
  /** Names of the tools this agent's model sees and may execute. */
  readonly toolNames: readonly string[]
  readonly disposed: boolean
  runTurn(prompt: readonly ContentBlock[], options?: TurnOptions): AgentTurn
  /** Abort any running turn, wait for it to settle, and unpublish the session. Idempotent. */
  dispose(): Promise<void>
}

export interface AgentRuntime {
  /** Publish a new agent. Rejects (having unpublished it) if `signal` aborts or setup fails. */
  createAgent(options: CreateAgentOptions): Promise<LocalAgent>
  getAgent(id: SessionId): LocalAgent | undefined
  sessionIds(): readonly SessionId[]
  readonly defaultModel: string
}

/**
 * The in-process agent runtime: a registry of published agents, each with an in-memory session
 * log. Every agent gets its own flat toolset from the factory — nothing is inherited from a parent
 * agent except, for a fork, the conversation seed.
 */
export function createAgentRuntime(runtimeOptions: AgentRuntimeOptions): AgentRuntime {
  const agents = new Map<SessionId, LocalAgent>()
  const generateId = runtimeOptions.generateId ?? randomUUID

  async function createAgent(create: CreateAgentOptions): Promise<LocalAgent> {
    const signal = create.signal
    throwIfAborted(signal)
    if (create.seed !== undefined) {
      const violation = seedViolation(create.seed)
      if (violation !== undefined) throw new Error(`Invalid session seed: ${violation}.`)
    }
    const options: AgentOptions = { ...create.options }
    const modelId = options.model ?? runtimeOptions.defaultModel
    const model = runtimeOptions.resolveModel(modelId)
    const personaTemplate = create.persona ?? runtimeOptions.persona
    const persona =
      personaTemplate === undefined
        ? undefined
        : interpolatePersona(personaTemplate, {
            ...runtimeOptions.personaVariables,
            cwd: create.cwd,
          })
    const system =
      [runtimeOptions.system, persona]
        .filter((part) => part !== undefined && part !== '')
        .join('\n\n') || undefined

    const id = generateId()
    const header: SessionHeader = {
      id,
      cwd: create.cwd,
      ...(create.parentSession === undefined ? {} : { parentSession: create.parentSession }),
      ...(create.delegationDepth === undefined ? {} : { delegationDepth: create.delegationDepth }),
    }
    const events: SessionEvent[] = [...(create.seed ?? [])]
    const agent = createLocalAgent({
      id,
      header,
      options: { ...options, model: modelId },
      events,
      system,
      model,
    })
    // Publish first: tools are built for a session that exists, and the caller can observe the
    // child from here on. Any failure below must unpublish it again.
    agents.set(id, agent.agent)
    try {
      const tools = await (runtimeOptions.tools ?? defaultTools)({
        sessionId: id,
        cwd: create.cwd,
        signal,
        options: { ...options, model: modelId },
      })
      throwIfAborted(signal)
      const allowed = new Set(applyToolFilter(Object.keys(tools), create.toolFilter))
      // One visibility: the filtered set is both what the model is shown and what can execute.
      agent.equip(Object.fromEntries(Object.entries(tools).filter(([name]) => allowed.has(name))))
      return agent.agent
    } catch (error) {
      await agent.agent.dispose()
      throw error
    }
  }

  function createLocalAgent(init: {
    id: SessionId
    header: SessionHeader
    options: AgentOptions
    events: SessionEvent[]
    system: string | undefined
    model: LanguageModelV4
  }): { agent: LocalAgent; equip(tools: ToolSet): void } {
    const { events } = init
    let tools: ToolSet = {}
    let current: { turn: AgentTurn; controller: AbortController } | undefined
    let disposing: Promise<void> | undefined
    let disposed = false

    const append = (event: DistributiveOmit<SessionEvent, 'seq'>): void => {
      events.push({ ...event, seq: events.length })
    }

    function runTurn(prompt: readonly ContentBlock[], turnOptions: TurnOptions = {}): AgentTurn {
      if (disposed || disposing !== undefined)
        throw new AgentsError(AgentsErrorCode.AGENT_DISPOSED, `Agent ${init.id} is disposed.`)
      if (current !== undefined && !current.turn.settled) {
        throw new AgentsError(
          AgentsErrorCode.AGENT_BUSY,
          `Agent ${init.id} is already running a turn.`,
        )
      }
      const turnId = generateId()
      const controller = new AbortController()
      const onOuterAbort = (): void => controller.abort(turnOptions.signal?.reason)
      if (turnOptions.signal?.aborted === true) onOuterAbort()
      else turnOptions.signal?.addEventListener('abort', onOuterAbort, { once: true })
      const steering = experimental_createSteering()
      const history = messagesOf(events)
      const capture =
        turnOptions.outputSchema === undefined
          ? undefined
          : createCaptureToolBinding(turnOptions.outputSchema)
      let settled = false

      append({ type: 'turn/start', turnId })
      const onEvent = (event: AgentLoopEvent): void => {
        if (event.type === 'message')
          append({ type: 'message', turnId, message: event.message, steering: event.steering })
      }
      const outcome = runAgent({
        model: init.model,
        ...(init.system === undefined ? {} : { system: init.system }),
        prompt: [...prompt],
        history,
        tools,
        maxSteps: runtimeOptions.maxSteps ?? 20,
        signal: controller.signal,
        steering,
        ...(capture === undefined ? {} : { structuredOutput: capture }),
        ...(runtimeOptions.maxRetries === undefined
          ? {}
          : { maxRetries: runtimeOptions.maxRetries }),
        onEvent,
      })
        .then(
          (result) => {
            append({
              type: 'turn/end',
              turnId,
              stopReason: result.stopReason,
              ...(result.failureCategory === undefined
                ? {}
                : { failureCategory: result.failureCategory }),
            })
            return result
          },
          (error: unknown) => {
            // A broken loop still closes its turn, so the log stays balanced for later forks.
            append({
              type: 'turn/end',
              turnId,
              stopReason: 'error',
              failureCategory: FailureCategory.InternalError,
            })
            throw error
          },
        )
        .finally(() => {
          settled = true
          turnOptions.signal?.removeEventListener('abort', onOuterAbort)
        })

      const turn: AgentTurn = {
        outcome,
        get settled() {
          return settled
        },
        steer(content) {
          if (settled)
            throw new AgentsError(
              AgentsErrorCode.RUN_SETTLED,
              `Turn ${turnId} has settled; resume instead of steering.`,
            )
          // Delivery is reported on the returned promise, which never rejects; undelivered steering
          // (the turn ended first) is visible in the log by its absence.
          void steering.steer({
            role: 'user',
            content: [{ type: 'text', text: promptText(content) }],
          })
        },
        abort(reason) {
          controller.abort(reason)
        },
      }
      current = { turn, controller }
      return turn
    }

    const agent: LocalAgent = {
      session: { id: init.id, header: init.header, events: () => [...events] },
      options: init.options,
      system: init.system,
      get toolNames() {
        return Object.keys(tools)
      },
      get disposed() {
        return disposed
      },
      runTurn,
      dispose() {
        disposing ??= (async () => {
          if (current !== undefined) {
            current.controller.abort(new DOMException('The agent was disposed.', 'AbortError'))
            // Quiescence: wait until the loop has stopped calling the model and tools.
            await current.turn.outcome.catch(() => undefined)
          }
          disposed = true
          if (agents.get(init.id) === agent) agents.delete(init.id)
        })()
        return disposing
      },
    }
    return {
      agent,
      equip(next) {
        tools = next
      },
    }
  }

  return {
    createAgent,
    getAgent: (id) => agents.get(id),
    sessionIds: () => [...agents.keys()],
    defaultModel: runtimeOptions.defaultModel,
  }
}

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never

/** Every agent's toolset unless the runtime is given another: the read-only workspace tools. */
export function defaultTools(scope: ToolScope): ToolSet {
  return createWorkspaceTools({ cwd: scope.cwd })
}

function throwIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted === true) {
    throw new AgentsError(AgentsErrorCode.START_ABORTED, 'Agent creation was cancelled.', {
      cause: abortReason(signal),
    })
  }
}
