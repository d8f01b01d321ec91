import { lstat, readFile, readdir, realpath, stat } from 'node:fs/promises'
import path from 'node:path'
import { tool } from 'ai'
import type { ToolSet } from 'ai'
import { z } from 'zod'
import { WorkspacePathError } from './agents-error.ts'
import { resolveWorkspacePath } from './workspace-path.ts'

export interface WorkspaceToolsOptions {
  /** The session's working directory; every path is confined to it. */
  readonly cwd: string
  /** Largest file `view` returns whole and `grep` searches. Default 256 KiB. */
  readonly maxFileBytes?: number
  /** Cap on `grep` matches. Default 200. */
  readonly maxGrepMatches?: number
}

export const WorkspaceToolName = { VIEW: 'view', LIST: 'list', GREP: 'grep' } as const

// Directories that are never the point of a search and can be enormous.
const SKIPPED_DIRECTORIES = new Set(['.git', 'node_modules'])

/**
 * Read-only workspace tools for children: `view`, `list` and `grep`, confined to `cwd`. A refused
 * path throws WorkspacePathError, which the loop hands back to the model as a tool error.
 */
export function createWorkspaceTools(options: WorkspaceToolsOptions): ToolSet {
  const maxFileBytes = options.maxFileBytes ?? 256 * 1024
  const maxGrepMatches = options.maxGrepMatches ?? 200
  const root = options.cwd

  return {
    [WorkspaceToolName.VIEW]: tool({
      description:
        'Read a text file in the working directory. Optional 1-based inclusive line range.',
      inputSchema: z.object({
        path: z.string().describe('File path relative to the working directory.'),
        startLine: z.number().int().min(1).optional(),
        endLine: z.number().int().min(1).optional(),
      }),
      execute: async ({ path: requested, startLine, endLine }) =>
        viewFile(root, requested, { startLine, endLine, maxFileBytes }),
    }),
    [WorkspaceToolName.LIST]: tool({
      description: 'List the entries of a directory in the working directory.',
      inputSchema: z.object({
        path: z.string().default('.').describe('Directory relative to the working directory.'),
      }),
      execute: async ({ path: requested }) => listDirectory(root, requested),
    }),
    [WorkspaceToolName.GREP]: tool({
      description:
        'Search text files under a directory of the working directory for a literal string or a regular expression.',
      inputSchema: z.object({
        pattern: z.string().min(1),
        path: z.string().default('.'),
        regex: z.boolean().default(false),
      }),
      execute: async ({ pattern, path: requested, regex }) =>
        grepFiles(root, requested, { pattern, regex, maxFileBytes, maxMatches: maxGrepMatches }),
    }),
  }
}

export async function viewFile(
  root: string,
  requested: string,
  options: { startLine?: number | undefined; endLine?: number | undefined; maxFileBytes: number },
): Promise<{ path: string; content: string; totalLines: number; truncated: boolean }> {
  const target = await resolveWorkspacePath(root, requested)
  const info = await stat(target)
  if (!info.isFile()) throw new WorkspacePathError(requested, 'it is not a file')
  const buffer = await readFile(target)
  const truncated = buffer.length > options.maxFileBytes
  const lines = buffer.subarray(0, options.maxFileBytes).toString('utf8').split('\n')
  const start = (options.startLine ?? 1) - 1
  const end = options.endLine ?? lines.length
  return {
    path: await relativeTo(root, target),
    content: lines.slice(start, end).join('\n'),
    totalLines: lines.length,
    truncated,
  }
}

export async function listDirectory(
  root: string,
  requested: string,
): Promise<{
  path: string
  entries: { name: string; type: 'file' | 'directory' | 'symlink' | 'other' }[]
}> {
  const target = await resolveWorkspacePath(root, requested)
  const info = await stat(target)
  if (!info.isDirectory()) throw new WorkspacePathError(requested, 'it is not a directory')
  const dirents = await readdir(target, { withFileTypes: true })
  const entries = dirents
    .map((entry) => ({
      name: entry.name,
      type: entry.isSymbolicLink()
        ? ('symlink' as const)
        : entry.isDirectory()
          ? ('directory' as const)
          : entry.isFile()
            ? ('file' as const)
            : ('other' as const),
    }))
    // Code-point order: deterministic regardless of the host locale.
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
  return { path: await relativeTo(root, target), entries }
}

export async function grepFiles(
  root: string,
  requested: string,
  options: { pattern: string; regex: boolean; maxFileBytes: number; maxMatches: number },
): Promise<{ matches: { path: string; line: number; text: string }[]; truncated: boolean }> {
  const start = await resolveWorkspacePath(root, requested)
  let matcher: (line: string) => boolean
  if (options.regex) {
    let expression: RegExp
    try {
      expression = new RegExp(options.pattern)
    } catch {
      throw new Error(`Invalid regular expression: ${options.pattern}`)
    }
    matcher = (line) => expression.test(line)
  } else {
    matcher = (line) => line.includes(options.pattern)
  }
  const matches: { path: string; line: number; text: string }[] = []
  let truncated = false

  // Symlinks are never followed, so a search cannot wander out of the workspace through one.
  const visit = async (target: string): Promise<void> => {
    if (truncated) return
    const info = await lstat(target)
    if (info.isSymbolicLink()) return
    if (info.isDirectory()) {
      const names = (await readdir(target)).sort()
      for (const name of names) {
        if (SKIPPED_DIRECTORIES.has(name)) continue
        await visit(path.join(target, name))
        if (truncated) return
      }
      return
    }
    if (!info.isFile() || info.size > options.maxFileBytes) return
    const text = await readFile(target, 'utf8')
    if (text.includes('\u0000')) return
    const lines = text.split('\n')
    for (const [index, line] of lines.entries()) {
      if (!matcher(line)) continue
      if (matches.length >= options.maxMatches) {
        truncated = true
        return
      }
      matches.push({
        path: await relativeTo(root, target),
        line: index + 1,
        text: line.slice(0, 500),
      })
    }
  }
  await visit(start)
  return { matches, truncated }
}

async function relativeTo(root: string, target: string): Promise<string> {
  return path.relative(await realpath(root), target) || '.'
}
