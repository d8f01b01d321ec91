import { SubagentError } from './errors.ts'
import {
  loadProfiles,
  profileSubagentSpecs,
  type Profile,
  type ProfileSubagent,
} from './profiles.ts'
import { loadSubagentDirectory } from './subagent-directory.ts'
import { projectSubagentSpec } from './subagent-spec-projection.ts'
import type { SubagentSpec } from './subagent-spec.ts'
import {
  subagentTransport,
  transportSteerable,
  type SubagentTransport,
} from './subagent-transport.ts'
import type { ToolDescriptor } from './tool-descriptor.ts'
import type { ToolInheritanceDiagnostic } from './tool-inheritance-policy.ts'
import type { AgentOptions, ToolRestriction } from './types.ts'

/**
 * The tools the fleet offers children by default: the read-only workspace toolset (`view`, `list`,
 * `grep`, confined to the workspace). The names live here, not with their implementations in
 * libs/agents, so that the API can judge a spec without loading model SDKs; a test in libs/agents
 * keeps the implementations' names equal to this list.
 */
export const WORKSPACE_TOOLS: readonly ToolDescriptor[] = [
  { name: 'view', description: 'Read a file in the workspace' },
  { name: 'list', description: 'List a directory in the workspace' },
  { name: 'grep', description: 'Search text in the workspace' },
]

/** The built-in child for demos, tests and the benchmark; no spec may take its name. */
export const BUILT_IN_SUBAGENT = 'scripted'

/** How a runnable subagent is started: the built-in scripted child, or a spec's transport. */
export type SubagentLaunch = { readonly kind: 'scripted' } | SubagentTransport

/** A subagent the fleet can start, with everything a worker needs to start it. */
export interface RunnableSubagent {
  readonly name: string
  readonly launch: SubagentLaunch
  readonly steerable: boolean
  /** Present when the model is known: the spec's own, or the caller's default for `inherit`. */
  readonly agentOptions?: AgentOptions
  readonly persona?: string
  /** The offered tools this child must not see; absent when it sees them all. */
  readonly toolFilter?: ToolRestriction
  /** Notes that do not stop the child from running (an optional tool that is not offered). */
  readonly diagnostics: readonly ToolInheritanceDiagnostic[]
}

/** A spec the fleet cannot run, and why: delegations to it are refused when they are accepted. */
export interface RefusedSubagent {
  readonly name: string
  readonly reason: string
  readonly diagnostics: readonly ToolInheritanceDiagnostic[]
}

export type SubagentAdmission =
  | { readonly kind: 'runnable'; readonly steerable: boolean }
  | { readonly kind: 'unknown'; readonly known: readonly string[] }
  | { readonly kind: 'refused'; readonly reason: string }

/**
 * Every subagent name the deployment knows, classified once. Both apps load it with the same rules,
 * so a name the API accepts is a name a worker starts.
 */
export interface SubagentCatalog {
  readonly runnable: ReadonlyMap<string, RunnableSubagent>
  readonly refused: ReadonlyMap<string, RefusedSubagent>
  /** The profiles file's profiles (empty without one): what a hosted session may run on. */
  readonly profiles: ReadonlyMap<string, Profile>
  /** The profiles file's `[subagents.*]`, with their descriptions, for hosted parents' tools. */
  readonly profileSubagents: ReadonlyMap<string, ProfileSubagent>
  admit(name: string): SubagentAdmission
}

/** The two calls the catalog logs with; a pino logger satisfies it, and this lib stays free of pino. */
export interface SubagentCatalogLogger {
  info(fields: Record<string, unknown>, message: string): void
  warn(fields: Record<string, unknown>, message: string): void
}

export interface SubagentCatalogOptions {
  /** The tools the fleet offers children; the workspace toolset by default. */
  readonly offeredTools?: readonly ToolDescriptor[]
  /**
   * Model for specs that omit `model` or say `inherit`. A caller that only admits (the API) may
   * leave it out: such entries then name no model, and the worker's runtime default applies.
   */
  readonly defaultModel?: string
  /** Told which subagents are runnable and, one line each, which are refused and why. */
  readonly logger?: SubagentCatalogLogger
  /**
   * Whether the built-in `scripted` child runs here (default true). Production deployments turn
   * it off: it is for demos, tests and the benchmark. Its name stays reserved either way.
   */
  readonly scriptedEnabled?: boolean
  /** The profiles a hosted session may run on (from a profiles file). */
  readonly profiles?: ReadonlyMap<string, Profile>
  readonly profileSubagents?: ReadonlyMap<string, ProfileSubagent>
}

export interface LoadSubagentCatalogOptions extends SubagentCatalogOptions {
  /** Directory of markdown subagent specs; absent means the built-in subagent only. */
  readonly subagentsDir?: string
  /** The profiles file (TOML); its `[subagents.*]` join the markdown specs in one catalog. */
  readonly profilesFile?: string
}

/**
 * Reads `subagentsDir` and `profilesFile` (each if any) and classifies their specs together; see
 * `createSubagentCatalog`. A malformed profiles file fails the load, naming its line and problem.
 */
export async function loadSubagentCatalog(
  options: LoadSubagentCatalogOptions = {},
): Promise<SubagentCatalog> {
  const specs =
    options.subagentsDir === undefined ? [] : await loadSubagentDirectory(options.subagentsDir)
  if (options.profilesFile === undefined) return createSubagentCatalog(specs, options)
  const file = await loadProfiles(options.profilesFile)
  const offered = (options.offeredTools ?? WORKSPACE_TOOLS).map((tool) => tool.name)
  return createSubagentCatalog([...specs, ...profileSubagentSpecs(file, offered)], {
    ...options,
    profiles: file.profiles,
    profileSubagents: file.subagents,
  })
}

/**
 * Classifies the built-in `scripted` subagent and every spec as runnable or refused. A spawn spec
 * is refused when its required tools are not offered or are denied; an ACP spec brings its own
 * tools and is always runnable. A malformed spec or a name declared twice fails the whole load:
 * which one would win must not depend on order.
 */
export function createSubagentCatalog(
  specs: readonly SubagentSpec[],
  options: SubagentCatalogOptions = {},
): SubagentCatalog {
  const offeredTools = options.offeredTools ?? WORKSPACE_TOOLS
  const runnable = new Map<string, RunnableSubagent>(
    options.scriptedEnabled === false
      ? []
      : [
          [
            BUILT_IN_SUBAGENT,
            {
              name: BUILT_IN_SUBAGENT,
              launch: { kind: 'scripted' },
              steerable: true,
              diagnostics: [],
            },
          ],
        ],
  )
  const refused = new Map<string, RefusedSubagent>()
  for (const spec of specs) {
    if (spec.name === BUILT_IN_SUBAGENT || runnable.has(spec.name) || refused.has(spec.name)) {
      throw new SubagentError(
        'DUPLICATE_SUBAGENT',
        `Subagent name "${spec.name}" is declared twice (built-in or markdown); rename one.`,
        { details: { name: spec.name } },
      )
    }
    const entry = classify(spec, offeredTools, options.defaultModel)
    if ('reason' in entry) refused.set(spec.name, entry)
    else runnable.set(spec.name, entry)
  }

  options.logger?.info(
    { runnable: [...runnable.keys()], refused: [...refused.keys()] },
    'subagents loaded',
  )
  for (const entry of refused.values()) {
    options.logger?.warn(
      { subagent: entry.name, reason: entry.reason, diagnostics: entry.diagnostics },
      'subagent refused',
    )
  }

  const known = [...runnable.keys()]
  return {
    runnable,
    refused,
    profiles: options.profiles ?? new Map(),
    profileSubagents: options.profileSubagents ?? new Map(),
    admit(name) {
      const found = runnable.get(name)
      if (found !== undefined) return { kind: 'runnable', steerable: found.steerable }
      const refusal = refused.get(name)
      if (refusal !== undefined) return { kind: 'refused', reason: refusal.reason }
      return { kind: 'unknown', known }
    },
  }
}

function classify(
  spec: SubagentSpec,
  offeredTools: readonly ToolDescriptor[],
  defaultModel: string | undefined,
): RunnableSubagent | RefusedSubagent {
  const transport = subagentTransport(spec)
  const steerable = transportSteerable(transport)
  if (transport.kind === 'acp')
    return { name: spec.name, launch: transport, steerable, diagnostics: [] }

  const inheritsModel = spec.model === undefined || spec.model === 'inherit'
  // Admission does not depend on the model, so without a default the projection gets a stand-in
  // that never reaches an entry: the entry then names no model and the runtime default applies.
  const projection = projectSubagentSpec(spec, {
    inheritedModelId: defaultModel ?? 'runtime-default',
  })
  const resolution = projection.toolPolicy.resolve(offeredTools)
  if (!resolution.ok) {
    return {
      name: spec.name,
      reason: refusalReason(resolution.diagnostics, offeredTools),
      diagnostics: resolution.diagnostics,
    }
  }
  const inherited = new Set(resolution.tools.map((tool) => tool.name))
  const deny = offeredTools.map((tool) => tool.name).filter((name) => !inherited.has(name))
  const model = inheritsModel ? defaultModel : projection.agentSpec.model
  return {
    name: spec.name,
    launch: transport,
    steerable,
    ...(model === undefined ? {} : { agentOptions: { model } }),
    ...(projection.agentSpec.systemPrompt === ''
      ? {}
      : { persona: projection.agentSpec.systemPrompt }),
    ...(deny.length === 0 ? {} : { toolFilter: { deny } }),
    diagnostics: resolution.diagnostics,
  }
}

/** One sentence per blocking diagnostic, worded for the fleet rather than a parent agent. */
function refusalReason(
  diagnostics: readonly ToolInheritanceDiagnostic[],
  offeredTools: readonly ToolDescriptor[],
): string {
  const offered = offeredTools.map((tool) => tool.name).join(', ') || 'none'
  return diagnostics
    .filter((d) => d.kind === 'missing_required_tool' || d.kind === 'denied_required_tool')
    .map((d) =>
      d.kind === 'missing_required_tool'
        ? `Required tool "${d.tool_name}" is not offered by the workers (they offer: ${offered}).`
        : d.message,
    )
    .join(' ')
}
