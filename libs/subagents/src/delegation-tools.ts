import { z } from 'zod'
import {
  createDelegateTool,
  createSubagentInfoTool,
  describeDelegation,
  toJsonSchema,
} from './delegate-tool.ts'
import { DELEGATION_TOOL_NAMES } from './delegation-mode.ts'
import type { SubagentRegistry } from './subagent-registry.ts'
import type { ToolDescriptor } from './tool-descriptor.ts'

// Async-mode inputs. Only the model-facing definitions live here; the durable background backend
// that executes them (acceptance, leases, attempts) lives outside this library.
/** What the model may pass to the async `delegate`: no host metadata, no unknown keys. */
export const asyncDelegateInputSchema = z.strictObject({
  name: z.string().min(1).describe('The registered subagent to delegate to.'),
  prompt: z.string().min(1).describe('The complete task for the subagent.'),
  agent_id: z
    .string()
    .min(1)
    .optional()
    .describe('Continue a settled background agent you already know; omit to start a new one.'),
})
const steerInput = z.strictObject({
  attempt_id: z.string().min(1).describe('The attempt to steer, as returned by delegate.'),
  message: z.string().min(1).describe('Additional guidance for the running subagent.'),
})
const cancelInput = z.strictObject({
  attempt_id: z.string().min(1).describe('The attempt to cancel.'),
})
const waitInput = z.strictObject({
  attempt_id: z.string().min(1).describe('The attempt to wait for.'),
  timeout_ms: z
    .number()
    .int()
    .positive()
    .optional()
    .describe('Upper bound on this single wait; do not call wait in a polling loop.'),
})

const infoInput = z.strictObject({})

/** The async tools' inputs by tool name: what a durable backend checks each call against. */
export const ASYNC_DELEGATION_INPUTS = {
  [DELEGATION_TOOL_NAMES.delegate]: asyncDelegateInputSchema,
  [DELEGATION_TOOL_NAMES.steer]: steerInput,
  [DELEGATION_TOOL_NAMES.cancel]: cancelInput,
  [DELEGATION_TOOL_NAMES.wait]: waitInput,
  [DELEGATION_TOOL_NAMES.info]: infoInput,
} as const

/**
 * The async-only topology's definitions (`delegate`, `steer_subagent`, `cancel_subagent`,
 * `wait_subagent`, `subagent_info`): `delegateDescription` lists the subagents; `info` is the
 * `subagent_info` definition (default: no input).
 */
export function asyncDelegationToolDefinitions(
  delegateDescription: string,
  info: ToolDescriptor = {
    name: DELEGATION_TOOL_NAMES.info,
    description: 'List the subagents you may delegate to, with their descriptions.',
    inputSchema: toJsonSchema(infoInput),
  },
): ToolDescriptor[] {
  return [
    {
      name: DELEGATION_TOOL_NAMES.delegate,
      description: `${delegateDescription}\nRuns in the background: returns an agent_id and an attempt_id immediately.`,
      inputSchema: toJsonSchema(asyncDelegateInputSchema),
    },
    {
      name: DELEGATION_TOOL_NAMES.steer,
      description: 'Send guidance to a running background subagent attempt.',
      inputSchema: toJsonSchema(steerInput),
    },
    {
      name: DELEGATION_TOOL_NAMES.cancel,
      description: 'Cancel a background subagent attempt.',
      inputSchema: toJsonSchema(cancelInput),
    },
    {
      name: DELEGATION_TOOL_NAMES.wait,
      description: 'Wait once, bounded, for a background subagent attempt to finish.',
      inputSchema: toJsonSchema(waitInput),
    },
    info,
  ]
}

/**
 * The delegation tool definitions an agent's model sees, by the registry's mode: none when
 * disabled; `delegate` + `subagent_info` when blocking; the async-only topology (`delegate`,
 * `steer_subagent`, `cancel_subagent`, `wait_subagent`, `subagent_info`) when async.
 */
export function delegationToolDefinitions(registry: SubagentRegistry): ToolDescriptor[] {
  switch (registry.mode) {
    case 'disabled':
      return []
    case 'blocking':
      return [createDelegateTool(registry).definition, createSubagentInfoTool(registry).definition]
    case 'async':
      return asyncDelegationToolDefinitions(
        describeDelegation(registry),
        createSubagentInfoTool(registry).definition,
      )
    default: {
      const unreachable: never = registry.mode
      throw new Error(`Unknown delegation mode ${String(unreachable)}`)
    }
  }
}
