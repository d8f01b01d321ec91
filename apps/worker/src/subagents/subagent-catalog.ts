import {
  createAcpProvider,
  createAgentRuntime,
  createScriptRegistry,
  createAsyncDelegationTools,
  createScriptedPromptProvider,
  createSpawnProvider,
  defaultTools,
  loadScriptDirectory,
  resolveModel,
  type ModelConfig,
} from '@baton/agents'
import type { Logger } from '@baton/observability'
import type { AttemptQueues } from '@baton/queue'
import { getAttempt, parentAgentName, type Db } from '@baton/store'
import { createHostedDelegationBackend } from '../hosted/delegation-backend.ts'
import {
  createSubagentCatalog,
  createSubagentService,
  loadSubagentCatalog,
  PROFILE_TOOLSETS,
  WORKSPACE_TOOLS,
  type AgentOptions,
  type SubagentCatalog,
  type SubagentProvider,
  type SubagentService,
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

/** The subagents a worker can run: the seam's service plus one entry per runnable catalog name. */
export interface WorkerSubagents {
  readonly service: SubagentService
  readonly entries: ReadonlyMap<string, SubagentEntry>
  /**
   * Gives hosted parents' delegation tools the ledger and queue they act on (the runtime binds
   * them once it has connected). Before it, or without profiles, parents get no such tools.
   */
  bindHosted?(backend: HostedToolDeps): void
}

/** What a hosted parent's delegation tools act on. */
export interface HostedToolDeps {
  readonly db: Db
  readonly queues: AttemptQueues
}

/** The agent option under which a hosted run's attempt tells its tools which run it is. */
export const HOSTED_RUN_OPTION = 'hostedRun'

/** The value of `HOSTED_RUN_OPTION`: the run (its attempt's id) and its profile. */
export interface HostedRunOption {
  readonly runId: string
  readonly profile: string
}

/**
 * The built-in `scripted` subagent only (tests and the benchmark), optionally with another
 * provider in its place (a test observing starts and aborts).
 */
export function builtInSubagents(
  provider: SubagentProvider = createScriptedPromptProvider(),
): WorkerSubagents {
  return subagentsFromCatalog(createSubagentCatalog([]), { scripted: provider })
}

export interface LoadSubagentsOptions {
  /** Directory of markdown subagent specs; absent means built-ins only. */
  readonly subagentsDir?: string
  /** The profiles file (TOML); its subagents join the catalog. */
  readonly profilesFile?: string
  /** Directory of `<name>.json` scripts for `scripted:<name>` models. */
  readonly scriptedModelsDir?: string
  /** Model for specs that omit `model` or say `inherit`. */
  readonly defaultModel: string
  readonly models: Omit<ModelConfig, 'scripts'>
  readonly logger: Logger
  /** Whether the built-in `scripted` child runs (default true; off in production). */
  readonly scriptedEnabled?: boolean
}

/**
 * Builds the worker's subagents from the shared catalog: whatever it classifies as runnable gets a
 * provider here; what it refuses is never registered (the API refuses it at accept time).
 */
export async function loadWorkerSubagents(options: LoadSubagentsOptions): Promise<WorkerSubagents> {
  const catalog = await loadSubagentCatalog({
    ...(options.subagentsDir === undefined ? {} : { subagentsDir: options.subagentsDir }),
    ...(options.profilesFile === undefined ? {} : { profilesFile: options.profilesFile }),
    defaultModel: options.defaultModel,
    logger: options.logger,
    ...(options.scriptedEnabled === undefined ? {} : { scriptedEnabled: options.scriptedEnabled }),
  })
  const scripts =
    options.scriptedModelsDir === undefined
      ? createScriptRegistry()
      : await loadScriptDirectory(options.scriptedModelsDir)
  let hosted: HostedToolDeps | undefined
  const agentRuntime = createAgentRuntime({
    resolveModel: (modelId) => resolveModel(modelId, { ...options.models, scripts }),
    defaultModel: options.defaultModel,
    tools: async (scope) => {
      const tools = defaultTools(scope)
      const run = scope.options[HOSTED_RUN_OPTION] as HostedRunOption | undefined
      if (run === undefined || hosted === undefined) return tools
      return { ...tools, ...(await hostedTools(catalog, hosted, run)) }
    },
  })
  return {
    ...subagentsFromCatalog(catalog, {
      scripted: createScriptedPromptProvider(),
      spawn: createSpawnProvider({ runtime: agentRuntime }),
    }),
    bindHosted: (deps) => {
      hosted = deps
    },
  }
}

/**
 * The async delegation tools of a hosted parent whose profile names subagents (none otherwise):
 * exactly the profile's subagents, acting on the run's own session.
 */
async function hostedTools(
  catalog: SubagentCatalog,
  deps: HostedToolDeps,
  run: HostedRunOption,
): Promise<ReturnType<typeof createAsyncDelegationTools>> {
  const profile = catalog.profiles.get(run.profile)
  if (profile === undefined || profile.subagents.length === 0) return {}
  const attempt = await getAttempt(deps.db, run.runId)
  if (attempt === undefined) return {}
  const subagents = profile.subagents.map((name) => ({
    name,
    description: catalog.profileSubagents.get(name)?.description ?? name,
  }))
  return createAsyncDelegationTools(
    createHostedDelegationBackend(
      { ...deps, subagents, budgets: profile.budgets },
      { namespaceId: attempt.namespaceId, sessionId: attempt.sessionId, runId: run.runId },
    ),
  )
}

interface CatalogProviders {
  readonly scripted: SubagentProvider
  /** Required once the catalog holds an in-process spec. */
  readonly spawn?: SubagentProvider
}

/** Maps each runnable catalog entry to a registered provider; availability is the catalog's call. */
function subagentsFromCatalog(
  catalog: SubagentCatalog,
  providers: CatalogProviders,
): WorkerSubagents {
  const service = createSubagentService()
  service.registerProvider(providers.scripted)
  if (providers.spawn !== undefined) service.registerProvider(providers.spawn)
  const entries = new Map<string, SubagentEntry>()
  for (const subagent of catalog.runnable.values()) {
    let provider: string
    switch (subagent.launch.kind) {
      case 'scripted':
        provider = providers.scripted.name
        break
      case 'spawn':
        if (providers.spawn === undefined)
          throw new Error(`subagent "${subagent.name}" needs the spawn provider`)
        provider = providers.spawn.name
        break
      case 'acp': {
        // An external agent: a provider of its own, spawning the spec's command for each run.
        const acp = createAcpProvider({
          name: `acp:${subagent.name}`,
          command: subagent.launch.command,
          args: subagent.launch.args,
        })
        service.registerProvider(acp)
        provider = acp.name
        break
      }
      default: {
        const unreachable: never = subagent.launch
        throw new Error(`unknown subagent launch ${JSON.stringify(unreachable)}`)
      }
    }
    entries.set(subagent.name, {
      name: subagent.name,
      provider,
      ...(subagent.agentOptions === undefined ? {} : { agentOptions: subagent.agentOptions }),
      ...(subagent.persona === undefined ? {} : { persona: subagent.persona }),
      ...(subagent.toolFilter === undefined ? {} : { toolFilter: subagent.toolFilter }),
    })
  }
  // Each profile's parent: a hosted run is an attempt of its session's parent agent, run in
  // process on the profile's model.
  for (const profile of catalog.profiles.values()) {
    if (providers.spawn === undefined) throw new Error('hosted profiles need the spawn provider')
    const name = parentAgentName(profile.name)
    // The parent sees the workspace tools of its toolsets only (and its delegation tools).
    const tools = new Set(profile.toolsets.flatMap((t) => PROFILE_TOOLSETS[t] ?? []))
    const deny = WORKSPACE_TOOLS.map((t) => t.name).filter((t) => !tools.has(t))
    entries.set(name, {
      name,
      provider: providers.spawn.name,
      agentOptions: { model: profile.modelId },
      ...(deny.length === 0 ? {} : { toolFilter: { deny } }),
    })
  }
  return { service, entries }
}
