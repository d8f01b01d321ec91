import {
  createAcpProvider,
  createAgentRuntime,
  createScriptRegistry,
  createScriptedPromptProvider,
  createSpawnProvider,
  loadScriptDirectory,
  resolveModel,
  WorkspaceToolName,
  type ModelConfig,
} from '@baton/agents'
import type { Logger } from '@baton/observability'
import {
  createSubagentService,
  loadSubagentDirectory,
  projectSubagentSpec,
  subagentTransport,
  type AgentOptions,
  type SubagentProvider,
  type SubagentService,
  type ToolDescriptor,
  type ToolRestriction,
} from '@baton/subagents'

/** How the worker starts one named subagent: which provider, with which start-time options. */
export interface SubagentEntry {
  readonly name: string
  readonly provider: string
  readonly agentOptions?: AgentOptions
  readonly persona?: string
  readonly toolFilter?: ToolRestriction
}

/** The subagents a worker can run: the seam's service plus the catalog of names. */
export interface WorkerSubagents {
  readonly service: SubagentService
  readonly entries: ReadonlyMap<string, SubagentEntry>
}

/** The tools a worker offers children: the read-only workspace toolset, confined to its cwd. */
export const WORKSPACE_TOOLS: readonly ToolDescriptor[] = [
  { name: WorkspaceToolName.VIEW, description: 'Read a file in the workspace' },
  { name: WorkspaceToolName.LIST, description: 'List a directory in the workspace' },
  { name: WorkspaceToolName.GREP, description: 'Search text in the workspace' },
]

export const BUILT_IN_SUBAGENT = 'scripted'

/**
 * The built-in `scripted` subagent only (tests and the benchmark), optionally with another
 * provider in its place (a test observing starts and aborts).
 */
export function builtInSubagents(
  provider: SubagentProvider = createScriptedPromptProvider(),
): WorkerSubagents {
  const service = createSubagentService()
  service.registerProvider(provider)
  return {
    service,
    entries: new Map([[BUILT_IN_SUBAGENT, { name: BUILT_IN_SUBAGENT, provider: provider.name }]]),
  }
}

export interface LoadSubagentsOptions {
  /** Directory of markdown subagent specs; absent means built-ins only. */
  readonly subagentsDir?: string
  /** Directory of `<name>.json` scripts for `scripted:<name>` models. */
  readonly scriptedModelsDir?: string
  /** Model for specs that omit `model` or say `inherit`. */
  readonly defaultModel: string
  readonly models: Omit<ModelConfig, 'scripts'>
  readonly logger: Logger
}

/**
 * Builds the worker's subagents: the built-in `scripted` subagent plus one subagent per markdown
 * spec — in-process (`spawn`) by default, or an external ACP agent with `provider: acp`. A spec whose required tools the worker cannot offer is unavailable: it is left
 * out with a warning naming the diagnostics, so delegations to it fail loudly as unknown.
 */
export async function loadWorkerSubagents(options: LoadSubagentsOptions): Promise<WorkerSubagents> {
  const { service, entries } = builtInSubagents()
  const catalog = new Map(entries)
  const scripts =
    options.scriptedModelsDir === undefined
      ? createScriptRegistry()
      : await loadScriptDirectory(options.scriptedModelsDir)
  const agentRuntime = createAgentRuntime({
    resolveModel: (modelId) => resolveModel(modelId, { ...options.models, scripts }),
    defaultModel: options.defaultModel,
  })
  service.registerProvider(createSpawnProvider({ runtime: agentRuntime }))

  const specs =
    options.subagentsDir === undefined ? [] : await loadSubagentDirectory(options.subagentsDir)
  for (const spec of specs) {
    if (catalog.has(spec.name))
      throw new Error(`subagent "${spec.name}" is declared twice (built-in or markdown)`)
    const transport = subagentTransport(spec)
    if (transport.kind === 'acp') {
      // An external agent: a provider of its own, spawning the spec's command for each run.
      const provider = createAcpProvider({
        name: `acp:${spec.name}`,
        command: transport.command,
        args: transport.args,
      })
      service.registerProvider(provider)
      catalog.set(spec.name, { name: spec.name, provider: provider.name })
      continue
    }
    const projection = projectSubagentSpec(spec, { inheritedModelId: options.defaultModel })
    const resolution = projection.toolPolicy.resolve(WORKSPACE_TOOLS)
    if (!resolution.ok) {
      options.logger.warn(
        { subagent: spec.name, diagnostics: resolution.diagnostics },
        'subagent unavailable',
      )
      continue
    }
    const inherited = new Set(resolution.tools.map((t) => t.name))
    const deny = WORKSPACE_TOOLS.map((t) => t.name).filter((name) => !inherited.has(name))
    catalog.set(spec.name, {
      name: spec.name,
      provider: 'spawn',
      agentOptions: { model: projection.agentSpec.model },
      ...(projection.agentSpec.systemPrompt === ''
        ? {}
        : { persona: projection.agentSpec.systemPrompt }),
      ...(deny.length === 0 ? {} : { toolFilter: { deny } }),
    })
  }
  options.logger.info({ subagents: [...catalog.keys()] }, 'subagents loaded')
  return { service, entries: catalog }
}
