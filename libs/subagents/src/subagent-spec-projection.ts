import { z } from 'zod'
import {
  createSubagentCapabilityInheritancePolicy,
  type SubagentCapabilityInheritancePolicy,
} from './capability-inheritance-policy.ts'
import { SubagentError } from './errors.ts'
import type { SubagentSpec } from './subagent-spec.ts'
import {
  createSubagentToolInheritancePolicy,
  type SubagentToolInheritancePolicy,
} from './tool-inheritance-policy.ts'

/** A child agent definition in the same shape the host uses for regular agents. */
export interface AgentSpec {
  readonly name: string
  readonly description: string
  /** Always concrete: `inherit` has been resolved against the host's model. */
  readonly model: string
  readonly systemPrompt: string
  readonly metadata: Readonly<Record<string, unknown>>
}

/** Metadata key under which the projected capability policy travels with the agent spec. */
export const CAPABILITY_POLICY_METADATA_KEY = 'subagent_capability_policy'

export interface SubagentSpecProjection {
  readonly agentSpec: AgentSpec
  readonly toolPolicy: SubagentToolInheritancePolicy
  readonly capabilityPolicy: SubagentCapabilityInheritancePolicy
}

export interface ProjectSubagentSpecOptions {
  /** The parent's concrete model id, used when the spec omits `model` or says `inherit`. */
  readonly inheritedModelId?: string
}

// A spec can be built programmatically, so its metadata is re-validated here rather than trusted.
const policyMetadataSchema = z.object({
  denied_tools: z.array(z.string()).optional(),
  inherit_hooks: z.boolean().optional(),
  inherit_capabilities: z.boolean().optional(),
  denied_capabilities: z.array(z.string()).optional(),
})

/**
 * Materialize a spec through the host's ordinary agent-spec path: a child `AgentSpec`, the tool
 * inheritance policy (with no explicit tool lists, inherit every parent tool except denied and
 * main-agent-only ones) and the capability policy, which is also copied into the agent spec's
 * metadata so it travels with the spec.
 */
export function projectSubagentSpec(
  spec: SubagentSpec,
  options: ProjectSubagentSpecOptions = {},
): SubagentSpecProjection {
  const model = resolveModel(spec, options.inheritedModelId)
  const policy = policyMetadataSchema.safeParse(spec.metadata)
  if (!policy.success) {
    throw new SubagentError(
      'INVALID_SPEC',
      `Subagent "${spec.name}" has malformed policy metadata: ${policy.error.issues.map((issue) => `\`${issue.path.join('.')}\` ${issue.message}`).join('; ')}.`,
      { cause: policy.error },
    )
  }
  const toolPolicy = createSubagentToolInheritancePolicy({
    required: spec.tools,
    optional: spec.optionalTools,
    denied: policy.data.denied_tools ?? [],
    inheritAll: spec.tools.length === 0 && spec.optionalTools.length === 0,
  })
  const capabilityPolicy = createSubagentCapabilityInheritancePolicy({
    hooks: policy.data.inherit_hooks ?? false,
    capabilityBundles: policy.data.inherit_capabilities ?? false,
    deniedCapabilities: policy.data.denied_capabilities ?? [],
  })
  return {
    agentSpec: {
      name: spec.name,
      description: spec.description,
      model,
      systemPrompt: spec.systemPrompt,
      metadata: {
        ...spec.metadata,
        [CAPABILITY_POLICY_METADATA_KEY]: {
          hooks: capabilityPolicy.hooks,
          capability_bundles: capabilityPolicy.capabilityBundles,
          denied_capabilities: capabilityPolicy.deniedCapabilities,
        },
      },
    },
    toolPolicy,
    capabilityPolicy,
  }
}

function resolveModel(spec: SubagentSpec, inheritedModelId: string | undefined): string {
  if (spec.model !== undefined && spec.model !== 'inherit') return spec.model
  if (
    inheritedModelId === undefined ||
    inheritedModelId.trim() === '' ||
    inheritedModelId === 'inherit'
  ) {
    throw new SubagentError(
      'INHERITED_MODEL_REQUIRED',
      `Subagent "${spec.name}" inherits its model; pass a concrete inheritedModelId or set \`model:\` in its frontmatter.`,
    )
  }
  return inheritedModelId
}
