import { readFile } from 'node:fs/promises'
import { parse, TomlError } from 'smol-toml'
import { z } from 'zod'
import { modelIdProblem } from '@baton/contracts'
import { SubagentError } from './errors.ts'
import type { SubagentSpec } from './subagent-spec.ts'

/**
 * The toolsets a profile may name, and the workspace tools each one offers (the fleet's offered
 * tools, `WORKSPACE_TOOLS`). A child of a profile sees only its toolsets' tools.
 */
export const PROFILE_TOOLSETS: Readonly<Record<string, readonly string[]>> = {
  workspace: ['view', 'list', 'grep'],
  filesystem: ['view', 'list'],
  grep: ['grep'],
}

/** What a profile may bound about the delegations of a session it hosts. */
export interface ProfileBudgets {
  readonly childrenPerRun?: number
  readonly childrenRunning?: number
  /** Tokens the session's children may spend, counted from their terminal commits. */
  readonly childTokens?: number
  /**
   * How deep a chain of delegations may go: a child the session's parent delegates is at depth 1,
   * a child delegated by that child (naming it as parent attempt) at depth 2, and so on.
   */
  readonly childDepth?: number
}

/** What a hosted session has used of its budgets, read from the ledger. */
export interface BudgetUse {
  /** Children the delegating run made (0 for a delegation without a parent run). */
  readonly ofRun: number
  /** Children of the session not finished. */
  readonly running: number
  /** Tokens the session's finished children spent. */
  readonly childTokens: number
  /** The depth the new child would have: 1, or one more than its parent attempt's. */
  readonly depth: number
}

/** A budget a new child would exceed: its profile key, its limit, what is used, and why. */
export interface BudgetExceeded {
  readonly budget: 'children_per_run' | 'children_running' | 'child_tokens' | 'child_depth'
  readonly limit: number
  readonly used: number
  readonly message: string
}

/** Whether a profile bounds anything: without budgets, nothing needs counting. */
export function hasBudgets(budgets: ProfileBudgets | undefined): boolean {
  return (
    budgets?.childrenPerRun !== undefined ||
    budgets?.childrenRunning !== undefined ||
    budgets?.childTokens !== undefined ||
    budgets?.childDepth !== undefined
  )
}

/**
 * The one budget check, for every way a child is delegated into a hosted session (the parent's
 * `delegate` tool and HTTP): the first budget one more child would exceed, or none. The message
 * is what the model reads and what the HTTP refusal says.
 */
export function exceededBudget(
  budgets: ProfileBudgets | undefined,
  use: BudgetUse,
  parentRun: boolean,
): BudgetExceeded | undefined {
  const perRun = budgets?.childrenPerRun
  if (parentRun && perRun !== undefined && use.ofRun >= perRun)
    return {
      budget: 'children_per_run',
      limit: perRun,
      used: use.ofRun,
      message: `over budget: this run may delegate ${String(perRun)} children and has delegated ${String(use.ofRun)}`,
    }
  const running = budgets?.childrenRunning
  if (running !== undefined && use.running >= running)
    return {
      budget: 'children_running',
      limit: running,
      used: use.running,
      message: `over budget: ${String(use.running)} children are running, the most this session may run at once is ${String(running)}`,
    }
  const tokens = budgets?.childTokens
  if (tokens !== undefined && use.childTokens >= tokens)
    return {
      budget: 'child_tokens',
      limit: tokens,
      used: use.childTokens,
      message: `over budget: this session's children spent ${String(use.childTokens)} tokens, the most they may spend is ${String(tokens)}`,
    }
  // `used` is the depth the delegating side is at: the new child would be one deeper.
  const depth = budgets?.childDepth
  if (depth !== undefined && use.depth > depth)
    return {
      budget: 'child_depth',
      limit: depth,
      used: use.depth - 1,
      message: `over budget: this child would be at depth ${String(use.depth)}, the deepest this session may delegate is ${String(depth)}`,
    }
  return undefined
}

/** A `[profiles.NAME]` table: a model, the subagents it exposes, the toolsets of its agent. */
export interface Profile {
  readonly name: string
  readonly modelId: string
  /** The `[subagents.*]` names a parent on this profile may delegate to, exactly these. */
  readonly subagents: readonly string[]
  readonly toolsets: readonly string[]
  readonly budgets: ProfileBudgets
}

/** A `[subagents.NAME]` table: a child run on a profile, with its tool requirements. */
export interface ProfileSubagent {
  readonly name: string
  readonly profile: string
  readonly description: string
  readonly requiredTools: readonly string[]
  readonly optionalTools: readonly string[]
}

export interface ProfileFile {
  readonly path: string
  readonly profiles: ReadonlyMap<string, Profile>
  readonly subagents: ReadonlyMap<string, ProfileSubagent>
}

const names = z.array(z.string().min(1))
const profileSchema = z.strictObject({
  model_id: z.string().min(1),
  subagents: names.default([]),
  toolsets: names.default([]),
  children_per_run: z.number().int().min(1).optional(),
  children_running: z.number().int().min(1).optional(),
  child_tokens: z.number().int().min(1).optional(),
  // Like every budget, at least 1: a profile whose parent may not delegate names no subagents.
  child_depth: z.number().int().min(1).optional(),
})
const subagentSchema = z.strictObject({
  profile: z.string().min(1),
  description: z.string().min(1),
  required_tools: names.default([]),
  optional_tools: names.default([]),
})
const fileSchema = z.strictObject({
  profiles: z.record(z.string(), z.unknown()).default({}),
  subagents: z.record(z.string(), z.unknown()).default({}),
})

/** One problem of a profile file, where it is. */
interface Problem {
  readonly line: number
  readonly message: string
}

/** Reads and checks `path`; see `parseProfiles`. */
export async function loadProfiles(path: string): Promise<ProfileFile> {
  let text: string
  try {
    text = await readFile(path, 'utf8')
  } catch (error) {
    throw new SubagentError('INVALID_PROFILES', `${path}: cannot be read`, { cause: error })
  }
  return parseProfiles(text, path)
}

/**
 * Parses a profiles file (TOML, the `[profiles.*]` / `[subagents.*]` shape) and checks every
 * reference in it: each profile's model id and toolsets, the subagents it names, each subagent's
 * profile and tools. Every problem is reported at once, each as `path:line: problem`, in one
 * `INVALID_PROFILES` error: a deployment with a bad file refuses to start.
 */
export function parseProfiles(text: string, path: string): ProfileFile {
  let raw: unknown
  try {
    raw = parse(text)
  } catch (error) {
    if (error instanceof TomlError) {
      const reason = error.message.split('\n')[0] ?? 'invalid TOML'
      throw refusal(path, [{ line: error.line, message: `not valid TOML: ${reason}` }])
    }
    throw error
  }
  const problems: Problem[] = []
  const locate = lineLocator(text)
  const file = fileSchema.safeParse(raw)
  if (!file.success) {
    throw refusal(
      path,
      file.error.issues.map((issue) => ({
        line: locate(issuePath([], issue)),
        message: issueText(issue),
      })),
    )
  }
  const profiles = new Map<string, Profile>()
  for (const [name, table] of Object.entries(file.data.profiles)) {
    const parsed = profileSchema.safeParse(table)
    if (!parsed.success) {
      for (const issue of parsed.error.issues)
        problems.push({
          line: locate(issuePath(['profiles', name], issue)),
          message: `profile "${name}": ${issueText(issue)}`,
        })
      continue
    }
    const p = parsed.data
    const modelProblem = modelIdProblem(p.model_id)
    if (modelProblem !== undefined)
      problems.push({
        line: locate(['profiles', name, 'model_id']),
        message: `profile "${name}": ${modelProblem}`,
      })
    for (const toolset of p.toolsets) {
      if (PROFILE_TOOLSETS[toolset] === undefined)
        problems.push({
          line: locate(['profiles', name, 'toolsets']),
          message: `profile "${name}": unknown toolset "${toolset}" (known: ${Object.keys(PROFILE_TOOLSETS).join(', ')})`,
        })
    }
    profiles.set(name, {
      name,
      modelId: p.model_id,
      subagents: p.subagents,
      toolsets: p.toolsets,
      budgets: {
        ...(p.children_per_run === undefined ? {} : { childrenPerRun: p.children_per_run }),
        ...(p.children_running === undefined ? {} : { childrenRunning: p.children_running }),
        ...(p.child_tokens === undefined ? {} : { childTokens: p.child_tokens }),
        ...(p.child_depth === undefined ? {} : { childDepth: p.child_depth }),
      },
    })
  }
  const subagents = new Map<string, ProfileSubagent>()
  for (const [name, table] of Object.entries(file.data.subagents)) {
    const parsed = subagentSchema.safeParse(table)
    if (!parsed.success) {
      for (const issue of parsed.error.issues)
        problems.push({
          line: locate(issuePath(['subagents', name], issue)),
          message: `subagent "${name}": ${issueText(issue)}`,
        })
      continue
    }
    const s = parsed.data
    const profile = profiles.get(s.profile)
    if (profile === undefined) {
      if (!(s.profile in file.data.profiles))
        problems.push({
          line: locate(['subagents', name, 'profile']),
          message: `subagent "${name}": unknown profile "${s.profile}"`,
        })
    } else {
      const tools = new Set(profile.toolsets.flatMap((t) => PROFILE_TOOLSETS[t] ?? []))
      for (const [key, list] of [
        ['required_tools', s.required_tools],
        ['optional_tools', s.optional_tools],
      ] as const) {
        for (const tool of list) {
          if (!tools.has(tool))
            problems.push({
              line: locate(['subagents', name, key]),
              message: `subagent "${name}": tool "${tool}" is in no toolset of profile "${s.profile}" (its tools: ${[...tools].join(', ') || 'none'})`,
            })
        }
      }
    }
    subagents.set(name, {
      name,
      profile: s.profile,
      description: s.description,
      requiredTools: s.required_tools,
      optionalTools: s.optional_tools,
    })
  }
  for (const profile of profiles.values()) {
    for (const subagent of profile.subagents) {
      if (!(subagent in file.data.subagents))
        problems.push({
          line: locate(['profiles', profile.name, 'subagents']),
          message: `profile "${profile.name}": unknown subagent "${subagent}"`,
        })
    }
  }
  if (problems.length > 0) throw refusal(path, problems)
  return { path, profiles, subagents }
}

/**
 * The subagent specs of a profile file's `[subagents.*]`, for the one catalog: each runs on its
 * profile's model and sees only the tools of its profile's toolsets (the offered tools outside
 * them denied). A child's profile never gets delegation tools: nested subagents are disabled.
 */
export function profileSubagentSpecs(
  file: ProfileFile,
  offeredTools: readonly string[],
): SubagentSpec[] {
  return [...file.subagents.values()].map((subagent) => {
    const profile = file.profiles.get(subagent.profile)
    if (profile === undefined) throw new Error(`checked profile "${subagent.profile}" is missing`)
    const tools = new Set(profile.toolsets.flatMap((t) => PROFILE_TOOLSETS[t] ?? []))
    return {
      name: subagent.name,
      description: subagent.description,
      tools: subagent.requiredTools,
      optionalTools: subagent.optionalTools,
      model: profile.modelId,
      systemPrompt: '',
      metadata: { denied_tools: offeredTools.filter((tool) => !tools.has(tool)) },
    }
  })
}

/** Where an issue is: its path, and for unknown keys the first of them. */
function issuePath(table: readonly string[], issue: z.core.$ZodIssue): string[] {
  const path = [...table, ...issue.path.map(String)]
  return issue.code === 'unrecognized_keys' ? [...path, issue.keys[0] ?? ''] : path
}

function issueText(issue: z.core.$ZodIssue): string {
  const key = issue.path.at(-1)
  if (issue.code === 'unrecognized_keys') return `unknown key(s) ${issue.keys.join(', ')}`
  return key === undefined ? issue.message : `"${String(key)}": ${issue.message}`
}

function refusal(path: string, problems: readonly Problem[]): SubagentError {
  const lines = problems.map((p) => `${path}:${p.line}: ${p.message}`)
  return new SubagentError('INVALID_PROFILES', lines.join('\n'), {
    details: { path, problems },
  })
}

/**
 * The line of a key in the file: the header of its table (`[profiles.NAME]`), then the first
 * `key =` line under that header. A path the text does not show (e.g. a missing key) answers its
 * table's header line, and a table the text does not show answers line 1.
 */
function lineLocator(text: string): (path: readonly string[]) => number {
  const lines = text.split(/\r?\n/)
  const headerOf = (table: readonly string[]): number => {
    const wanted = table.join('.')
    return lines.findIndex((line) => {
      const match = /^\s*\[\s*([^\]]+?)\s*\]\s*(#.*)?$/.exec(line)
      return match?.[1]?.replace(/\s*\.\s*/g, '.').replace(/"/g, '') === wanted
    })
  }
  return (path) => {
    const [section, name, key] = path
    if (section === undefined) return 1
    if (name === undefined) {
      const index = lines.findIndex((line) =>
        new RegExp(`^\\s*\\[?\\s*${escape(section)}\\b`).test(line),
      )
      return index === -1 ? 1 : index + 1
    }
    const header = headerOf([section, name])
    if (header === -1) return 1
    if (key === undefined) return header + 1
    for (let i = header + 1; i < lines.length; i += 1) {
      const line = lines[i] ?? ''
      if (/^\s*\[/.test(line)) break
      if (new RegExp(`^\\s*"?${escape(key)}"?\\s*=`).test(line)) return i + 1
    }
    return header + 1
  }
}

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
}
