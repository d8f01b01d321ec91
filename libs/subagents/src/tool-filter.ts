import { SubagentError } from './errors.ts'
import type { ToolRestriction } from './types.ts'

/**
 * The names a child sees after `restriction` is applied. A denied name that matches no tool is a
 * loud error rather than a silent no-op: a typo in a deny list would otherwise leave the tool the
 * caller meant to hide fully visible to the child.
 */
export function applyToolFilter(
  toolNames: readonly string[],
  restriction: ToolRestriction | undefined,
): string[] {
  if (restriction === undefined) return [...toolNames]
  const known = new Set(toolNames)
  const unknown = restriction.deny.filter((name) => !known.has(name))
  if (unknown.length > 0) {
    throw new SubagentError(
      'UNKNOWN_TOOL',
      `Tool filter denies unknown tool(s): ${unknown.join(', ')}. Known tools: ${toolNames.join(', ') || '(none)'}.`,
      { details: { unknown } },
    )
  }
  const denied = new Set(restriction.deny)
  return toolNames.filter((name) => !denied.has(name))
}
