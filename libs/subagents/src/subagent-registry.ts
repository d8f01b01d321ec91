import { createLifecycleLog, type AgentContext } from './agent-context.ts'
import type { SubagentCapabilityInheritancePolicy } from './capability-inheritance-policy.ts'
import { SubagentDelegationMode } from './delegation-mode.ts'
import { isSubagentError, SubagentError } from './errors.ts'
import type {
  SubagentExecutionHook,
  SubagentExecutionMetadata,
  SubagentExecutionOutcome,
} from './execution-hook.ts'
import { SubagentLifecycleEventKind, type SubagentLifecycleEvent } from './subagent-lifecycle.ts'
import {
  createSubagentTask,
  type DelegatedSubagent,
  type SubagentRunOutput,
  type SubagentTask,
  type SubagentTaskInput,
} from './subagent-task.ts'
import type { ToolDescriptor } from './tool-descriptor.ts'
import {
  createSubagentToolInheritancePolicy,
  type SubagentToolInheritancePolicy,
  type ToolInheritanceDiagnostic,
} from './tool-inheritance-policy.ts'

/** Runs one delegated task in the prepared child context. */
export type SubagentRunner = (
  task: SubagentTask,
  childContext: AgentContext,
) => Promise<SubagentRunOutput>

/** A named, executable subagent. */
export interface SubagentConfig {
  readonly name: string
  readonly description?: string
  readonly run: SubagentRunner
  /** Which parent tools the child inherits. Default: only tools marked `auto_inherit`. */
  readonly toolPolicy?: SubagentToolInheritancePolicy
  /** Which parent hooks and capability bundles the child inherits. Default: none. */
  readonly capabilityPolicy?: SubagentCapabilityInheritancePolicy
  readonly hooks?: readonly SubagentExecutionHook[]
  /** Let THIS subagent delegate further while it runs. Off by default: recursion needs an explicit policy. */
  readonly nestedDelegation?: boolean
}

/** One frame of the subagent stack kept in context metadata. */
export interface SubagentStackFrame {
  readonly name: string
  readonly taskId: string
  readonly nestedDelegation: boolean
}

/** Context metadata key holding the `SubagentStackFrame[]` of the delegations in progress. */
export const SUBAGENT_STACK_METADATA_KEY = 'subagent.stack'

export function readSubagentStack(context: AgentContext): readonly SubagentStackFrame[] {
  const stack = context.metadata.get(SUBAGENT_STACK_METADATA_KEY)
  return Array.isArray(stack) ? (stack as SubagentStackFrame[]) : []
}

/** Model-facing availability report; snake-case because it is returned verbatim by `subagent_info`. */
export interface SubagentInfo {
  readonly name: string
  readonly description?: string
  readonly available: boolean
  readonly inherited_tools: readonly string[]
  readonly diagnostics: readonly ToolInheritanceDiagnostic[]
}

export interface SubagentRegistryOptions {
  /** Default `blocking`. `disabled` keeps the configs (for `subagentInfo`) but refuses delegation. */
  readonly mode?: SubagentDelegationMode
}

export interface SubagentRegistry {
  readonly mode: SubagentDelegationMode
  /** Add a subagent; names are unique. Returns the registry for chaining. */
  register(config: SubagentConfig): SubagentRegistry
  get(name: string): SubagentConfig | undefined
  names(): readonly string[]
  /** Delegate a bare prompt (a task with a generated id). */
  delegate(name: string, prompt: string, context: AgentContext): Promise<DelegatedSubagent>
  /** Delegate a task, recording lifecycle records on `context.lifecycle`. */
  delegateTask(
    name: string,
    task: SubagentTaskInput,
    context: AgentContext,
  ): Promise<DelegatedSubagent>
  /** Per subagent: would delegation from an agent holding `parentTools` be possible, and with which tools? */
  subagentInfo(parentTools: readonly ToolDescriptor[]): SubagentInfo[]
}

const DEFAULT_TOOL_POLICY = createSubagentToolInheritancePolicy()

export function createSubagentRegistry(
  configs: readonly SubagentConfig[] = [],
  options: SubagentRegistryOptions = {},
): SubagentRegistry {
  const byName = new Map<string, SubagentConfig>()
  const mode = options.mode ?? SubagentDelegationMode.blocking

  const registry: SubagentRegistry = {
    mode,
    register(config) {
      if (byName.has(config.name)) {
        throw new SubagentError(
          'DUPLICATE_SUBAGENT',
          `A subagent named "${config.name}" is already registered; subagent names must be unique.`,
        )
      }
      byName.set(config.name, config)
      return registry
    },
    get: (name) => byName.get(name),
    names: () => [...byName.keys()],
    delegate: (name, prompt, context) => registry.delegateTask(name, { prompt }, context),
    delegateTask: (name, input, context) =>
      delegateTask(byName, mode, name, createSubagentTask(input), context),
    subagentInfo(parentTools) {
      return [...byName.values()].map((config) => {
        const resolution = (config.toolPolicy ?? DEFAULT_TOOL_POLICY).resolve(parentTools)
        return {
          name: config.name,
          ...(config.description === undefined ? {} : { description: config.description }),
          available: resolution.ok,
          inherited_tools: resolution.ok ? resolution.tools.map((tool) => tool.name) : [],
          diagnostics: resolution.diagnostics,
        }
      })
    },
  }
  for (const config of configs) registry.register(config)
  return registry
}

async function delegateTask(
  configs: ReadonlyMap<string, SubagentConfig>,
  mode: SubagentDelegationMode,
  name: string,
  task: SubagentTask,
  parent: AgentContext,
): Promise<DelegatedSubagent> {
  const publish = (event: SubagentLifecycleEvent): void => {
    parent.lifecycle.record(SubagentLifecycleEventKind[event.kind], event)
  }
  const refuse = (error: SubagentError, toolName?: string): SubagentError => {
    publish(failedEvent(name, task, error, toolName))
    return error
  }

  if (mode === SubagentDelegationMode.disabled) {
    throw refuse(
      new SubagentError('DELEGATION_DISABLED', 'Subagent delegation is disabled for this agent.'),
    )
  }
  const config = configs.get(name)
  if (config === undefined) {
    throw refuse(
      new SubagentError(
        'UNKNOWN_SUBAGENT',
        `No subagent named "${name}". Registered: ${[...configs.keys()].join(', ') || '(none)'}.`,
      ),
    )
  }
  const stack = readSubagentStack(parent)
  const caller = stack.at(-1)
  if (caller !== undefined && !caller.nestedDelegation) {
    throw refuse(
      new SubagentError(
        'NESTED_DELEGATION_DENIED',
        `Subagent "${caller.name}" may not delegate to "${name}": nested delegation is off unless the delegating subagent sets nestedDelegation: true.`,
        { details: { caller: caller.name, target: name } },
      ),
    )
  }
  const resolution = (config.toolPolicy ?? DEFAULT_TOOL_POLICY).resolve(parent.tools)
  if (!resolution.ok) {
    const first = resolution.diagnostics[0]
    const code =
      first?.kind === 'denied_required_tool' ? 'DENIED_REQUIRED_TOOL' : 'MISSING_REQUIRED_TOOL'
    const message = `Subagent "${name}" is unavailable: ${resolution.diagnostics.map((diagnostic) => diagnostic.message).join(' ')}`
    throw refuse(
      new SubagentError(code, message, { details: { diagnostics: resolution.diagnostics } }),
      first?.tool_name,
    )
  }

  const inheritedCapabilities = config.capabilityPolicy?.resolve({
    hooks: parent.hooks,
    capabilityBundles: parent.capabilityBundles,
  }) ?? {
    hooks: [],
    capabilityBundles: [],
  }
  const childStack: SubagentStackFrame[] = [
    ...stack,
    { name, taskId: task.id, nestedDelegation: config.nestedDelegation ?? false },
  ]
  const child: AgentContext = {
    metadata: new Map([...parent.metadata, [SUBAGENT_STACK_METADATA_KEY, childStack]]),
    lifecycle: createLifecycleLog(),
    usage: parent.usage,
    dependencies: parent.dependencies,
    tools: resolution.tools,
    hooks: inheritedCapabilities.hooks,
    capabilityBundles: inheritedCapabilities.capabilityBundles,
  }
  const metadata: SubagentExecutionMetadata = {
    name,
    taskId: task.id,
    prompt: task.prompt,
    ...(task.metadata === undefined ? {} : { taskMetadata: task.metadata }),
    depth: childStack.length,
  }
  const hooks = config.hooks ?? []

  publish({ kind: 'started', taskId: task.id, name, metadata: task.metadata ?? {} })
  let outcome: SubagentExecutionOutcome
  try {
    for (const hook of hooks) await hook.beforeSubagentRun?.(metadata, child)
    const result = await config.run(task, child)
    outcome = {
      status: 'completed',
      output: result.output,
      ...(result.usage === undefined ? {} : { usage: result.usage }),
      ...(result.runId === undefined ? {} : { runId: result.runId }),
    }
  } catch (error) {
    outcome = { status: 'failed', error }
  }
  try {
    for (const hook of hooks) await hook.afterSubagentRun?.(metadata, child, outcome)
  } catch (error) {
    outcome = { status: 'failed', error }
  }

  if (outcome.status === 'failed') {
    publish(failedEvent(name, task, outcome.error))
    throw outcome.error
  }
  publish({
    kind: 'completed',
    taskId: task.id,
    name,
    metadata: task.metadata ?? {},
    output: outcome.output,
    ...(outcome.runId === undefined ? {} : { runId: outcome.runId }),
  })
  const { status: _status, ...result } = outcome
  return { name, task, ...result }
}

function failedEvent(
  name: string,
  task: SubagentTask,
  error: unknown,
  toolName?: string,
): SubagentLifecycleEvent {
  return {
    kind: 'failed',
    taskId: task.id,
    name,
    metadata: {
      ...task.metadata,
      error_kind: isSubagentError(error) ? error.code.toLowerCase() : 'run_failed',
      ...(toolName === undefined ? {} : { tool_name: toolName }),
      message: error instanceof Error ? error.message : String(error),
    },
  }
}
