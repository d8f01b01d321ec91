import { readFile, realpath, stat } from 'node:fs/promises'
import { isAbsolute, relative, sep } from 'node:path'
import { RequestError } from '@agentclientprotocol/sdk'

/** Files larger than this are refused rather than streamed over stdio. */
export const MAX_READ_BYTES = 4 * 1024 * 1024

export interface WorkspaceReadRequest {
  readonly path: string
  /** 1-based first line to return. */
  readonly line?: number | null
  /** Maximum number of lines to return. */
  readonly limit?: number | null
}

/**
 * Answers an agent's `fs/read_text_file` inside the session workspace only. Both the root and the
 * target are resolved through symlinks before the containment check, so a link inside the
 * workspace cannot reach outside it. Refusals are JSON-RPC errors with messages that reveal nothing
 * the agent did not already send.
 */
export async function readWorkspaceTextFile(
  workspaceRoot: string,
  request: WorkspaceReadRequest,
): Promise<string> {
  if (!isAbsolute(request.path))
    throw RequestError.invalidParams(undefined, 'path must be absolute')

  let target: string
  let root: string
  try {
    root = await realpath(workspaceRoot)
    target = await realpath(request.path)
  } catch {
    throw RequestError.resourceNotFound(request.path)
  }
  if (!isInside(root, target))
    throw RequestError.invalidParams(undefined, 'path is outside the session workspace')

  const info = await stat(target)
  if (!info.isFile()) throw RequestError.invalidParams(undefined, 'path is not a regular file')
  if (info.size > MAX_READ_BYTES)
    throw RequestError.invalidParams(undefined, 'file is too large to read')

  const content = await readFile(target, 'utf8')
  return sliceLines(content, request.line ?? undefined, request.limit ?? undefined)
}

function isInside(root: string, target: string): boolean {
  const rel = relative(root, target)
  return rel !== '' && rel !== '..' && !rel.startsWith(`..${sep}`) && !isAbsolute(rel)
}

function sliceLines(content: string, line: number | undefined, limit: number | undefined): string {
  if (line === undefined && limit === undefined) return content
  const lines = content.split('\n')
  const start = Math.max(0, (line ?? 1) - 1)
  const end = limit === undefined ? lines.length : start + Math.max(0, limit)
  return lines.slice(start, end).join('\n')
}
