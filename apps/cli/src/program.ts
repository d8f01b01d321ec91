// The command tree of `baton`. Actions only turn parsed arguments into one call of a command
// function; what a command does and how it exits lives in commands/.
import { Command } from 'commander'
import { createCommandContext, type CliIo, type CommandContext } from './command-context.ts'
import { createNamespace, issueKey, listKeys, listNamespaces, revokeKey } from './commands/admin.ts'
import { showAgentHistory } from './commands/agents.ts'
import { cancelAttempt, showAttempt, steerAttempt, waitAttempt } from './commands/attempts.ts'
import { delegate, type DelegateOptions } from './commands/delegate.ts'
import type { ExitCode } from './exit-codes.ts'
import { parseBaseUrl, parseWaitBound } from './options.ts'

export interface GlobalOptions {
  readonly url?: string
  readonly apiKey?: string
  readonly json?: boolean
}

/**
 * Builds the program. Each action reports its exit code through `exit`; parse errors, help and
 * usage errors throw commander's CommanderError (`exitOverride`) for the caller to map.
 */
export function createProgram(io: CliIo, exit: (code: ExitCode) => void): Command {
  const program = new Command('baton')
    .description('Delegate tasks to Baton subagents and follow their attempts.')
    .option(
      '--url <url>',
      'API base URL (default: $BATON_URL or http://127.0.0.1:3000)',
      parseBaseUrl,
    )
    .option(
      '--api-key <key>',
      'API key sent as a Bearer token (default: $BATON_API_KEY; prefer the variable: arguments are visible to other users)',
    )
    .option('--json', "print the API's JSON answer on one line")
    // Set before any subcommand exists: subcommands copy these settings when they are created.
    .exitOverride()
    .configureOutput({
      writeOut: (text) => io.stdout.write(text),
      writeErr: (text) => io.stderr.write(text),
    })
    .showHelpAfterError('(add --help for usage)')

  /** Runs a command with the context of the global options, wherever they were given. */
  const run =
    <A extends unknown[]>(body: (ctx: CommandContext, ...args: A) => Promise<ExitCode>) =>
    async (...args: A): Promise<void> => {
      exit(await body(createCommandContext(io, program.opts<GlobalOptions>()), ...args))
    }

  program
    .command('delegate')
    .description('delegate PROMPT to the subagent NAME; with --wait, wait for its outcome')
    .argument('<name>', 'subagent name, e.g. scripted')
    .argument('<prompt>', 'the task for the subagent')
    .option('--session <id>', 'session id (default: a new generated one, shown in the output)')
    .option('--agent <agentId>', 'continue this agent instead of creating one')
    .option(
      '--wait <duration>',
      'wait at most this long for the outcome (500ms, 30s, 1m)',
      parseWaitBound,
    )
    .option('--idempotency-key <key>', 'makes a retried delegation answer the first one')
    .action(
      run((ctx, name: string, prompt: string, options: DelegateOptions) =>
        delegate(ctx, name, prompt, options),
      ),
    )

  const attempts = program
    .command('attempts')
    .description('read, wait on, cancel or steer an attempt')
  attempts
    .command('show')
    .description('show an attempt')
    .argument('<attemptId>')
    .action(run((ctx, attemptId: string) => showAttempt(ctx, attemptId)))
  attempts
    .command('wait')
    .description('one bounded wait for the attempt to end')
    .argument('<attemptId>')
    .option(
      '--timeout <duration>',
      'wait at most this long (500ms, 30s, 1m)',
      parseWaitBound,
      30_000,
    )
    .action(
      run((ctx, attemptId: string, options: { timeout: number }) =>
        waitAttempt(ctx, attemptId, options.timeout),
      ),
    )
  attempts
    .command('cancel')
    .description('cancel an attempt (queued: at once; running: its worker aborts the child)')
    .argument('<attemptId>')
    .option('--reason <text>', 'why, recorded with the request')
    .action(
      run((ctx, attemptId: string, options: { reason?: string }) =>
        cancelAttempt(ctx, attemptId, options.reason),
      ),
    )
  attempts
    .command('steer')
    .description('send a steering message to a running attempt')
    .argument('<attemptId>')
    .argument('<text>')
    .action(run((ctx, attemptId: string, text: string) => steerAttempt(ctx, attemptId, text)))

  program
    .command('agents')
    .description("read an agent's durable history")
    .command('context')
    .description("show the agent's history")
    .argument('<agentId>')
    .action(run((ctx, agentId: string) => showAgentHistory(ctx, agentId)))

  const namespaces = program
    .command('namespaces')
    .description('manage namespaces (needs the admin key)')
  namespaces
    .command('create')
    .description('create a namespace')
    .argument('<namespaceId>')
    .option('--description <text>')
    .action(
      run((ctx, namespaceId: string, options: { description?: string }) =>
        createNamespace(ctx, namespaceId, options.description),
      ),
    )
  namespaces
    .command('list')
    .description('list namespaces')
    .action(run((ctx) => listNamespaces(ctx)))

  const keys = program
    .command('keys')
    .description("manage a namespace's API keys (needs the admin key)")
  keys
    .command('create')
    .description('issue a key; prints it (the only time it is shown)')
    .argument('<namespaceId>')
    .argument('<name>', 'what the key is for, e.g. "agent host"')
    .action(run((ctx, namespaceId: string, name: string) => issueKey(ctx, namespaceId, name)))
  keys
    .command('list')
    .description("list a namespace's keys (prefixes only)")
    .argument('<namespaceId>')
    .action(run((ctx, namespaceId: string) => listKeys(ctx, namespaceId)))
  keys
    .command('revoke')
    .description('revoke a key')
    .argument('<keyId>')
    .action(run((ctx, keyId: string) => revokeKey(ctx, keyId)))

  return program
}
