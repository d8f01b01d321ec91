// The one place `baton` writes a file the user named (`-o FILE`).
import { writeFile } from 'node:fs/promises'
import { resolve } from 'node:path'

/** A file the user named could not be written; `describeFailure` maps it to its exit code. */
export class OutputFileError extends Error {
  constructor(file: string, cause: unknown) {
    super(`cannot write ${file}: ${cause instanceof Error ? cause.message : String(cause)}`, {
      cause,
    })
    this.name = 'OutputFileError'
  }
}

/** Writes `content` to `file` exactly (created or truncated) and answers its absolute path. */
export async function writeOutputFile(file: string, content: Uint8Array): Promise<string> {
  try {
    await writeFile(file, content)
  } catch (error) {
    throw new OutputFileError(file, error)
  }
  return resolve(file)
}
