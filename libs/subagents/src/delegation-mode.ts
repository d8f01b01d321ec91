/**
 * How an agent exposes delegation to its model:
 * - `blocking` (the compatibility default): `delegate` runs the child and returns its output.
 * - `async`: `delegate` accepts a background attempt; the model follows it with `steer_subagent`,
 *   `cancel_subagent` and one bounded `wait_subagent`. The durable backend lives outside this lib.
 * - `disabled` (worker mode): no delegation tools at all.
 */
export const SubagentDelegationMode = {
  blocking: 'blocking',
  async: 'async',
  disabled: 'disabled',
} as const
export type SubagentDelegationMode =
  (typeof SubagentDelegationMode)[keyof typeof SubagentDelegationMode]

export const DELEGATION_TOOL_NAMES = {
  delegate: 'delegate',
  steer: 'steer_subagent',
  cancel: 'cancel_subagent',
  wait: 'wait_subagent',
  info: 'subagent_info',
} as const

/** The model-facing tool names a mode installs. */
export function delegationToolNames(mode: SubagentDelegationMode): readonly string[] {
  switch (mode) {
    case 'blocking':
      return [DELEGATION_TOOL_NAMES.delegate, DELEGATION_TOOL_NAMES.info]
    case 'async':
      return [
        DELEGATION_TOOL_NAMES.delegate,
        DELEGATION_TOOL_NAMES.steer,
        DELEGATION_TOOL_NAMES.cancel,
        DELEGATION_TOOL_NAMES.wait,
        DELEGATION_TOOL_NAMES.info,
      ]
    case 'disabled':
      return []
    default: {
      const unreachable: never = mode
      throw new Error(`Unknown delegation mode ${String(unreachable)}`)
    }
  }
}
