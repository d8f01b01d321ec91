import { z } from 'zod'
import type { AgentContext } from './agent-context.ts'
import { DELEGATION_TOOL_NAMES } from './delegation-mode.ts'
import { SubagentError } from './errors.ts'
import type { SubagentInfo, SubagentRegistry } from './subagent-registry.ts'
import type { ToolDescriptor } from './tool-descriptor.ts'

export const delegateToolInputSchema = z.strictObject({
  name: z.string().min(1).describe('The registered subagent to delegate to.'),
  prompt: z
    .string()
    .min(1)
    .describe('The complete task for the subagent; it does not see this conversation.'),
})
export type DelegateToolInput = z.infer<typeof delegateToolInputSchema>

export interface DelegateToolOutput {
  readonly name: string
  readonly output: string
}

/** A model-facing tool: its definition (name, wording, JSON Schema input) plus a typed `call`. */
export interface CallableTool<Output> {
  readonly definition: ToolDescriptor
  /** Validates `input` against the tool's schema (INVALID_TOOL_INPUT) before acting. */
  call(context: AgentContext, input: unknown): Promise<Output>
}

export interface DelegateTool extends CallableTool<DelegateToolOutput> {
  readonly inputSchema: typeof delegateToolInputSchema
}

/**
 * The blocking `delegate` tool: the model picks a registered subagent by name and the parent waits
 * for its output. Refused for a `disabled` registry — worker mode installs no delegation tools.
 */
export function createDelegateTool(registry: SubagentRegistry): DelegateTool {
  if (registry.mode === 'disabled') {
    throw new SubagentError(
      'DELEGATION_DISABLED',
      'Cannot create the delegate tool: delegation is disabled for this registry.',
    )
  }
  return {
    inputSchema: delegateToolInputSchema,
    definition: {
      name: DELEGATION_TOOL_NAMES.delegate,
      description: describeDelegation(registry),
      inputSchema: toJsonSchema(delegateToolInputSchema),
    },
    async call(context, input) {
      const parsed = delegateToolInputSchema.safeParse(input)
      if (!parsed.success) throw invalidInput(DELEGATION_TOOL_NAMES.delegate, parsed.error)
      const delegated = await registry.delegate(parsed.data.name, parsed.data.prompt, context)
      return { name: delegated.name, output: delegated.output }
    },
  }
}

const subagentInfoInputSchema = z.strictObject({})

/** `subagent_info`: availability as delegation would see it, from the calling context's tools. */
export function createSubagentInfoTool(
  registry: SubagentRegistry,
): CallableTool<readonly SubagentInfo[]> {
  return {
    definition: {
      name: DELEGATION_TOOL_NAMES.info,
      description:
        'List the subagents you can delegate to, whether each is available, and which of your tools each would inherit.',
      inputSchema: toJsonSchema(subagentInfoInputSchema),
    },
    call(context, input) {
      const parsed = subagentInfoInputSchema.safeParse(input ?? {})
      if (!parsed.success)
        return Promise.reject(invalidInput(DELEGATION_TOOL_NAMES.info, parsed.error))
      return Promise.resolve(registry.subagentInfo(context.tools))
    },
  }
}

export function describeDelegation(registry: SubagentRegistry): string {
  const lines = registry.names().map((name) => {
    const description = registry.get(name)?.description
    return description === undefined ? `- ${name}` : `- ${name}: ${description}`
  })
  return [
    'Delegate a self-contained task to a subagent and receive its final output.',
    'Available subagents:',
    ...lines,
  ].join('\n')
}

export function toJsonSchema(schema: z.ZodType): Readonly<Record<string, unknown>> {
  // The `$schema` dialect marker is noise in a tool definition; models only need the shape.
  const { $schema: _dialect, ...rest } = z.toJSONSchema(schema) as Record<string, unknown>
  return rest
}

function invalidInput(tool: string, error: z.ZodError): SubagentError {
  return new SubagentError(
    'INVALID_TOOL_INPUT',
    `Invalid input for ${tool}: ${z.prettifyError(error)}`,
    { cause: error },
  )
}
