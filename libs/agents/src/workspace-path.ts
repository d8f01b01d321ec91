import { realpath } from 'node:fs/promises'
import path from 'node:path'
import { WorkspacePathError } from './agents-error.ts'

/**
 * Resolve a model-supplied path inside `root`, or refuse it. Both the lexical path and the real
 * path (after symlinks) must stay inside the root's real path: `..`, absolute paths elsewhere and
 * symlinks pointing out are all refused with a WorkspacePathError the model can read.
 */
export async function resolveWorkspacePath(root: string, requested: string): Promise<string> {
  const realRoot = await realpath(root)
  const candidate = path.resolve(realRoot, requested)
  if (!isInside(realRoot, candidate))
    throw new WorkspacePathError(requested, 'it is outside the working directory')
  let real: string
  try {
    real = await realpath(candidate)
  } catch (error) {
    if (isNodeError(error) && error.code === 'ENOENT')
      throw new WorkspacePathError(requested, 'it does not exist')
    throw error
  }
  if (!isInside(realRoot, real)) {
    throw new WorkspacePathError(
      requested,
      'it resolves through a symlink to outside the working directory',
    )
  }
  return real
}

export function isInside(root: string, candidate: string): boolean {
  return (
    candidate === root || candidate.startsWith(root.endsWith(path.sep) ? root : root + path.sep)
  )
}

function isNodeError(error: unknown): error is NodeJS.ErrnoException {
  return error instanceof Error && 'code' in error
}
