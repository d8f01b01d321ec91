import { CommanderError } from 'commander'
import { baseUrlOf, type CliIo } from './command-context.ts'
import { describeFailure, ExitCode } from './exit-codes.ts'
import { createProgram, type GlobalOptions } from './program.ts'

/**
 * Runs `baton` with `argv` (the arguments after the program name) and resolves with its exit code.
 * Output goes to `io.stdout`, errors to `io.stderr`; an error that is not about the API is thrown.
 */
export async function runCli(argv: readonly string[], io: CliIo): Promise<ExitCode> {
  let exitCode: ExitCode = ExitCode.Ok
  const program = createProgram(io, (code) => {
    exitCode = code
  })
  try {
    await program.parseAsync(argv, { from: 'user' })
    return exitCode
  } catch (error) {
    // Commander has already printed the problem (or the help that was asked for).
    if (error instanceof CommanderError) return error.exitCode === 0 ? ExitCode.Ok : ExitCode.Usage
    const failure = describeFailure(error, baseUrlOf(program.opts<GlobalOptions>(), io))
    if (failure === undefined) throw error
    io.stderr.write(`baton: ${failure.message}\n`)
    return failure.exitCode
  }
}
