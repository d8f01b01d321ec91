// The command tree of `baton`. Actions only turn parsed arguments into one call of a command
// function; what a command does and how it exits lives in commands/.
import { Command } from 'commander'
import { createCommandContext, type CliIo, type CommandContext } from './command-context.ts'
import {
  createNamespace,
  issueKey,
  listKeys,
  listNamespaces,
  revokeKey,
  setLimits,
  showLimits,
} from './commands/admin.ts'
import type { ClaimFence } from '@baton/contracts'
import { showAgentHistory } from './commands/agents.ts'
import { getArtifact } from './commands/artifacts.ts'
import { cancelAttempt, showAttempt, steerAttempt, waitAttempt } from './commands/attempts.ts'
import {
  claimContinuation,
  completeContinuation,
  failContinuation,
  heartbeatContinuation,
} from './commands/continuations.ts'
import { chat, createSession, runHosted, showSession } from './commands/sessions.ts'
import { delegate, type DelegateOptions } from './commands/delegate.ts'
import {
  cancelRun,
  completeRun,
  createRun,
  failRun,
  heartbeatRun,
  showRun,
} from './commands/runs.ts'
import {
  listDeliveries,
  removeWebhook,
  setWebhook,
  showWebhook,
  type WebhookTarget,
} from './commands/webhooks.ts'
import type { WebhookDeliveryState } from '@baton/contracts'
import type { ExitCode } from './exit-codes.ts'
import {
  parseBaseUrl,
  parseBytes,
  parseGeneration,
  parseLease,
  parseRetention,
  parseWaitBound,
} from './options.ts'

/** The default lease of a continuation claim and of its renewals. */
const DEFAULT_LEASE_MS = 60_000

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
      '--parent-run <runId>',
      'the run of the session that delegates: the result is handed back to it (or a continuation)',
    )
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
    .command('artifacts')
    .description("load an attempt's complete output")
    .command('get')
    .description(
      "write the artifact's exact bytes (verified against its digest) to stdout or to FILE; with --json, print its metadata instead",
    )
    .argument('<artifactId>', "the attempt view's artifact.artifactId")
    .option('-o, --output <file>', 'write the bytes to this file (created or truncated)')
    .action(
      run((ctx, artifactId: string, options: { output?: string }) =>
        getArtifact(ctx, artifactId, options.output),
      ),
    )

  const sessions = program
    .command('sessions')
    .description('hosted sessions: their parent runs on the fleet with a profile')
  sessions
    .command('create')
    .description('create a hosted session on a profile of the profiles file')
    .requiredOption('--profile <name>', 'the profile, e.g. demo')
    .action(run((ctx, options: { profile: string }) => createSession(ctx, options.profile)))
  sessions
    .command('show')
    .description('show a session')
    .argument('<sessionId>')
    .action(run((ctx, sessionId: string) => showSession(ctx, sessionId)))
  program
    .command('run')
    .description(
      'run INPUT on a hosted session; with --follow, stream its events (children attributed)',
    )
    .argument('<input>', "the parent's input")
    .requiredOption('--session <id>', 'the hosted session')
    .option('--follow', "stream the run's events until it ends")
    .action(
      run((ctx, input: string, options: { session: string; follow?: boolean }) =>
        runHosted(ctx, options.session, input, { follow: options.follow }),
      ),
    )
  program
    .command('chat')
    .description(
      "an interactive session on a hosted parent: each line of stdin is a run; the session's events and every run's answer are printed; /exit or the end of stdin ends it",
    )
    .requiredOption('--session <id>', 'the hosted session')
    .action(run((ctx, options: { session: string }) => chat(ctx, options.session)))

  const runs = program
    .command('runs')
    .description("create, keep, read and end a session's parent runs")
  runs
    .command('create')
    .description(
      'start a run of the session (at most one is active); with --consume, an explicit run',
    )
    .argument('<sessionId>')
    .option('--consume <attemptId...>', 'consume these suppressed results (an explicit run)')
    .option(
      '--lease <duration>',
      'the run lives this long unless renewed with `runs heartbeat` (1s to 10m; default 10m)',
      parseLease,
    )
    .action(
      run((ctx, sessionId: string, options: { consume?: string[]; lease?: number }) =>
        createRun(ctx, sessionId, { consume: options.consume, leaseMs: options.lease }),
      ),
    )
  runs
    .command('heartbeat')
    .description("extend a run's lease")
    .argument('<runId>')
    .option(
      '--lease <duration>',
      'the new lease from now (1s to 10m)',
      parseLease,
      DEFAULT_LEASE_MS,
    )
    .action(
      run((ctx, runId: string, options: { lease: number }) =>
        heartbeatRun(ctx, runId, options.lease),
      ),
    )
  runs
    .command('show')
    .description('show a run')
    .argument('<runId>')
    .action(run((ctx, runId: string) => showRun(ctx, runId)))
  runs
    .command('complete')
    .description('complete a run; what it did not consume comes back as continuations')
    .argument('<runId>')
    .option('--consumed <attemptId...>', 'results held for the run that it consumed itself')
    .action(
      run((ctx, runId: string, options: { consumed?: string[] }) =>
        completeRun(ctx, runId, options.consumed),
      ),
    )
  runs
    .command('fail')
    .description('end a run as failed')
    .argument('<runId>')
    .action(run((ctx, runId: string) => failRun(ctx, runId)))
  runs
    .command('cancel')
    .description('end a run as cancelled')
    .argument('<runId>')
    .option('--cascade', 'cancel every attempt below the run that has not finished too')
    .action(
      run((ctx, runId: string, options: { cascade?: boolean }) =>
        cancelRun(ctx, runId, options.cascade),
      ),
    )

  const continuations = program
    .command('continuations')
    .description("claim, keep and conclude a session's continuations")
  continuations
    .command('claim')
    .description("one bounded wait for the session's next continuation (exit 4 when none came)")
    .argument('<sessionId>')
    .option(
      '--timeout <duration>',
      'wait at most this long (500ms, 30s, 1m)',
      parseWaitBound,
      30_000,
    )
    .option(
      '--lease <duration>',
      'hold the claim this long (1s to 10m)',
      parseLease,
      DEFAULT_LEASE_MS,
    )
    .action(
      run((ctx, sessionId: string, options: { timeout: number; lease: number }) =>
        claimContinuation(ctx, sessionId, { timeoutMs: options.timeout, leaseMs: options.lease }),
      ),
    )
  /** A subcommand fenced by a claim: `--claim-token` and `--generation` from the claim's answer. */
  const fenced = (name: string, description: string) =>
    continuations
      .command(name)
      .description(description)
      .argument('<runId>', "the claim's runId")
      .requiredOption('--claim-token <token>', "the claim's claim.claimToken")
      .requiredOption('--generation <n>', "the claim's claim.generation", parseGeneration)
  const fenceOf = (options: { claimToken: string; generation: number }): ClaimFence => ({
    claimToken: options.claimToken,
    generation: options.generation,
  })
  fenced('heartbeat', "extend the claim's lease")
    .option(
      '--lease <duration>',
      'the new lease from now (1s to 10m)',
      parseLease,
      DEFAULT_LEASE_MS,
    )
    .action(
      run((ctx, runId: string, options: ClaimFence & { lease: number }) =>
        heartbeatContinuation(ctx, runId, fenceOf(options), options.lease),
      ),
    )
  fenced('complete', 'conclude the claimed continuation as delivered').action(
    run((ctx, runId: string, options: ClaimFence) =>
      completeContinuation(ctx, runId, fenceOf(options)),
    ),
  )
  fenced('fail', 'conclude the claimed continuation as failed (its result is suppressed)').action(
    run((ctx, runId: string, options: ClaimFence) =>
      failContinuation(ctx, runId, fenceOf(options)),
    ),
  )

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
  namespaces
    .command('limits')
    .description("show a namespace's limits (stored, or the default)")
    .argument('<namespaceId>')
    .action(run((ctx, namespaceId: string) => showLimits(ctx, namespaceId)))
  namespaces
    .command('set-limits')
    .description("replace a namespace's limits; one not given falls back to the default")
    .argument('<namespaceId>')
    .option('--artifact-quota-bytes <bytes>', 'unexpired artifacts together', parseBytes)
    .option('--artifact-max-bytes <bytes>', 'the largest artifact', parseBytes)
    .option('--agent-history-max-bytes <bytes>', "one agent's history", parseBytes)
    .option(
      '--ledger-retention <duration>',
      'how long finished history is kept, e.g. 12h or 30d (1m to 3660d)',
      parseRetention,
    )
    .action(
      run(
        (
          ctx,
          namespaceId: string,
          options: {
            artifactQuotaBytes?: number
            artifactMaxBytes?: number
            agentHistoryMaxBytes?: number
            ledgerRetention?: number
          },
        ) => {
          const { ledgerRetention, ...bytes } = options
          return setLimits(ctx, namespaceId, {
            ...bytes,
            ...(ledgerRetention === undefined ? {} : { ledgerRetentionMs: ledgerRetention }),
          })
        },
      ),
    )

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

  const webhooks = program
    .command('webhooks')
    .description(
      "a session's webhook, or with --namespace a namespace's (admin key), and its deliveries",
    )
  const target = (options: { session?: string; namespace?: string }): WebhookTarget => {
    // A usage error (exit 2), before anything is sent.
    if ((options.session === undefined) === (options.namespace === undefined))
      webhooks.error('name exactly one of --session and --namespace', { exitCode: 2 })
    return {
      ...(options.session === undefined ? {} : { sessionId: options.session }),
      ...(options.namespace === undefined ? {} : { namespace: options.namespace }),
    }
  }
  const scoped = (name: string, description: string) =>
    webhooks
      .command(name)
      .description(description)
      .option('--session <sessionId>', "the session's webhook")
      .option('--namespace <namespaceId>', "the namespace's webhook (admin key)")
  scoped('set', 'register the webhook; prints its secret (the only time it is shown)')
    .argument('<url>')
    .option('--secret <whsec>', 'the secret to sign with (default: a new one)')
    .action(
      run((ctx, url: string, options: { session?: string; namespace?: string; secret?: string }) =>
        setWebhook(ctx, target(options), url, options.secret),
      ),
    )
  scoped('show', 'show the webhook (its URL)').action(
    run((ctx, options: { session?: string; namespace?: string }) =>
      showWebhook(ctx, target(options)),
    ),
  )
  scoped('remove', 'remove the webhook').action(
    run((ctx, options: { session?: string; namespace?: string }) =>
      removeWebhook(ctx, target(options)),
    ),
  )
  webhooks
    .command('deliveries')
    .description('list deliveries, newest first')
    .option('--session <sessionId>')
    .option('--state <state>', 'pending, sending, delivered, failed or superseded')
    .action(
      run((ctx, options: { session?: string; state?: WebhookDeliveryState }) =>
        listDeliveries(ctx, {
          ...(options.session === undefined ? {} : { sessionId: options.session }),
          ...(options.state === undefined ? {} : { state: options.state }),
        }),
      ),
    )

  return program
}
