import { createBatonClient, type BatonClient } from '@baton/client'
import type { AnyAttemptView } from '@baton/contracts'
import { exitCodeOfView, type ExitCode } from './exit-codes.ts'

/** What `baton` may touch of its process: streams and the variables it reads. */
export interface CliIo {
  /** What `chat` reads its turns from, line by line. */
  readonly stdin: NodeJS.ReadableStream
  /** Text, or an artifact's exact bytes. */
  readonly stdout: { write(chunk: string | Uint8Array): unknown; readonly isTTY?: boolean }
  readonly stderr: { write(text: string): unknown }
  readonly env: {
    readonly BATON_URL?: string | undefined
    readonly BATON_API_KEY?: string | undefined
  }
}

export const DEFAULT_BASE_URL = 'http://127.0.0.1:3000'

/**
 * How long any call may go unanswered beyond the wait it asks for: a server that holds a wait for
 * its bound answers soon after; one that says nothing at all is treated as unreachable.
 */
export const ANSWER_GRACE_MS = 10_000

/** Everything a command needs, built once from the global options. */
export interface CommandContext {
  readonly io: CliIo
  readonly baseUrl: string
  readonly client: BatonClient
  readonly json: boolean
  /** `--json`: the API's answer on one line; otherwise the human rendering. */
  print(answer: unknown, human: () => string): void
  /** Prints a wait's answer and returns its exit code (noting on stderr when the bound expired). */
  finishWait(view: AnyAttemptView, waitedMs: number, human: () => string): ExitCode
}

export function baseUrlOf(options: { readonly url?: string }, io: CliIo): string {
  return options.url ?? io.env.BATON_URL ?? DEFAULT_BASE_URL
}

export function createCommandContext(
  io: CliIo,
  options: { readonly url?: string; readonly apiKey?: string; readonly json?: boolean },
): CommandContext {
  const baseUrl = baseUrlOf(options, io)
  const apiKey = options.apiKey ?? emptyAsUndefined(io.env.BATON_API_KEY)
  const json = options.json === true
  const print = (answer: unknown, human: () => string): void => {
    io.stdout.write(`${json ? JSON.stringify(answer) : human()}\n`)
  }
  return {
    io,
    baseUrl,
    client: createBatonClient({ baseUrl, ...(apiKey === undefined ? {} : { apiKey }) }),
    json,
    print,
    finishWait(view, waitedMs, human) {
      print(view, human)
      const code = exitCodeOfView(view)
      if (view.status !== 'terminal') {
        io.stderr.write(
          `baton: attempt ${view.attemptId} is still ${view.status} after ${waitedMs}ms\n`,
        )
      }
      return code
    },
  }
}

function emptyAsUndefined(value: string | undefined): string | undefined {
  return value === undefined || value === '' ? undefined : value
}
