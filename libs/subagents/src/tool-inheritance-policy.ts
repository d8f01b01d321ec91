import type { ToolDescriptor } from './tool-descriptor.ts'

/**
 * Tools only the main agent may hold. A subagent has no direct human-in-the-loop responder, so
 * `ask_user_question` is filtered centrally: never inherited by auto-inherit, inherit-all or an
 * optional list, and declaring it required makes the subagent unavailable.
 */
export const MAIN_AGENT_ONLY_TOOLS: ReadonlySet<string> = new Set(['ask_user_question'])

/** Metadata key a parent tool sets to be inherited by every child by default. */
export const AUTO_INHERIT_METADATA_KEY = 'auto_inherit'

export type ToolInheritanceDiagnosticKind =
  | 'missing_required_tool'
  | 'denied_required_tool'
  | 'missing_optional_tool'
  | 'denied_optional_tool'

/**
 * Snake-case fields because diagnostics surface verbatim in the model-facing `subagent_info`
 * output and in lifecycle event metadata.
 */
export interface ToolInheritanceDiagnostic {
  readonly kind: ToolInheritanceDiagnosticKind
  readonly tool_name: string
  readonly message: string
}

export type ToolInheritanceResolution =
  | {
      readonly ok: true
      readonly tools: readonly ToolDescriptor[]
      readonly diagnostics: readonly ToolInheritanceDiagnostic[]
    }
  /** The subagent is unavailable: at least one required tool is missing or denied. */
  | { readonly ok: false; readonly diagnostics: readonly ToolInheritanceDiagnostic[] }

export interface SubagentToolInheritancePolicyOptions {
  /** Tools the child cannot work without: each must be present and not denied. */
  readonly required?: readonly string[]
  /** Tools attached when the parent has them; absence is only a diagnostic. */
  readonly optional?: readonly string[]
  /** Tools never inherited, whatever else the policy says. */
  readonly denied?: readonly string[]
  /** Inherit every parent tool (minus denied and main-agent-only). */
  readonly inheritAll?: boolean
}

export interface SubagentToolInheritancePolicy {
  readonly required: readonly string[]
  readonly optional: readonly string[]
  readonly denied: readonly string[]
  readonly inheritAll: boolean
  /** Which parent tools the child gets, in the parent's order, or why the child is unavailable. */
  resolve(parentTools: readonly ToolDescriptor[]): ToolInheritanceResolution
}

export function createSubagentToolInheritancePolicy(
  options: SubagentToolInheritancePolicyOptions = {},
): SubagentToolInheritancePolicy {
  const required = unique(options.required ?? [])
  const optional = unique(options.optional ?? [])
  const denied = unique(options.denied ?? [])
  const inheritAll = options.inheritAll ?? false
  const deniedSet = new Set(denied)
  const isBlocked = (name: string): boolean =>
    deniedSet.has(name) || MAIN_AGENT_ONLY_TOOLS.has(name)

  return {
    required,
    optional,
    denied,
    inheritAll,
    resolve(parentTools) {
      const byName = new Map(parentTools.map((tool) => [tool.name, tool]))
      const blocking: ToolInheritanceDiagnostic[] = []
      const notes: ToolInheritanceDiagnostic[] = []
      for (const name of required) {
        if (isBlocked(name))
          blocking.push(
            diagnostic('denied_required_tool', name, deniedReason(name, 'required', deniedSet)),
          )
        else if (!byName.has(name))
          blocking.push(
            diagnostic(
              'missing_required_tool',
              name,
              `Required tool "${name}" is not available to the parent agent.`,
            ),
          )
      }
      if (blocking.length > 0) return { ok: false, diagnostics: [...blocking, ...notes] }

      for (const name of optional) {
        if (isBlocked(name))
          notes.push(
            diagnostic('denied_optional_tool', name, deniedReason(name, 'optional', deniedSet)),
          )
        else if (!byName.has(name))
          notes.push(
            diagnostic(
              'missing_optional_tool',
              name,
              `Optional tool "${name}" is not available to the parent agent; continuing without it.`,
            ),
          )
      }
      const wanted = new Set([...required, ...optional])
      const tools = parentTools.filter(
        (tool) =>
          !isBlocked(tool.name) &&
          (inheritAll ||
            wanted.has(tool.name) ||
            tool.metadata?.[AUTO_INHERIT_METADATA_KEY] === true),
      )
      return { ok: true, tools: dedupeByName(tools), diagnostics: notes }
    },
  }
}

function deniedReason(
  name: string,
  role: 'required' | 'optional',
  denied: ReadonlySet<string>,
): string {
  return MAIN_AGENT_ONLY_TOOLS.has(name) && !denied.has(name)
    ? `${role === 'required' ? 'Required' : 'Optional'} tool "${name}" is main-agent-only and is never inherited by subagents.`
    : `${role === 'required' ? 'Required' : 'Optional'} tool "${name}" is denied by the subagent's tool policy.`
}

function diagnostic(
  kind: ToolInheritanceDiagnosticKind,
  tool_name: string,
  message: string,
): ToolInheritanceDiagnostic {
  return { kind, tool_name, message }
}

function unique(names: readonly string[]): string[] {
  return [...new Set(names)]
}

function dedupeByName(tools: readonly ToolDescriptor[]): ToolDescriptor[] {
  const seen = new Set<string>()
  return tools.filter((tool) => (seen.has(tool.name) ? false : (seen.add(tool.name), true)))
}
