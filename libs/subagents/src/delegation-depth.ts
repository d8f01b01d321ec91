import { SubagentError } from './errors.ts'
import type { Agent } from './types.ts'

/**
 * Delegation depth lives in two places the seam owns: the durable `session.header.delegationDepth`
 * (survives resume) and the runtime `options.subagentDepth` (set when the child is created). Either
 * may be missing — absence means top level, zero — and the greater present value is authoritative,
 * so neither a stale header nor a stale option can make a child look shallower than it is.
 */
export function readDelegationDepth(agent: Agent): number {
  const durable = agent.session.header.delegationDepth
  const runtime = agent.options.subagentDepth
  return Math.max(
    durable === undefined ? 0 : assertDepth(durable, 'session.header.delegationDepth'),
    runtime === undefined ? 0 : assertDepth(runtime, 'options.subagentDepth'),
  )
}

/**
 * The depth a new child of `parent` gets: parent + 1. Rejects a derived depth outside the
 * safe-integer domain (a parent already at MAX_SAFE_INTEGER cannot have a child) and, when
 * `maxDepth` is given, a depth above that absolute cap.
 */
export function deriveChildDepth(parent: Agent, maxDepth?: number): number {
  const child = readDelegationDepth(parent) + 1
  assertDepth(child, 'derived child depth')
  if (maxDepth !== undefined) {
    assertValidMaxDepth(maxDepth)
    if (child > maxDepth) {
      throw new SubagentError(
        'DEPTH_EXCEEDED',
        `Child delegation depth ${child} exceeds maxDepth ${maxDepth}; raise maxDepth or delegate from a shallower agent.`,
        { details: { depth: child, maxDepth } },
      )
    }
  }
  return child
}

/**
 * The depth of a resumed child. Resume reuses the child's durable session, so its recorded depth
 * stands; when the resuming parent is known, the child can also never sit shallower than
 * parent + 1. Either way resume never lowers a depth.
 */
export function resumedChildDepth(child: Agent, parent?: Agent): number {
  const recorded = readDelegationDepth(child)
  if (parent === undefined) return recorded
  return Math.max(recorded, deriveChildDepth(parent))
}

/** The fields an in-process provider stamps on a new child so both depth sources agree. */
export function childDepthFields(depth: number): {
  readonly delegationDepth: number
  readonly subagentDepth: number
} {
  assertDepth(depth, 'child depth')
  return { delegationDepth: depth, subagentDepth: depth }
}

/** `maxDepth` is an absolute cap and must itself be a non-negative safe integer. */
export function assertValidMaxDepth(maxDepth: number): void {
  assertDepth(maxDepth, 'maxDepth')
}

function assertDepth(value: number, label: string): number {
  if (!Number.isSafeInteger(value) || value < 0) {
    throw new SubagentError(
      'INVALID_DEPTH',
      `${label} must be a non-negative safe integer, got ${String(value)}.`,
      {
        details: { field: label },
      },
    )
  }
  return value
}
