// Hosted sessions: create one on a profile, run the parent on the fleet, follow its events, chat.
import { createInterface } from 'node:readline/promises'
import type { HostedRunView, SessionEvent, SessionView } from '@baton/contracts'
import { ANSWER_GRACE_MS, type CommandContext } from '../command-context.ts'
import { ExitCode } from '../exit-codes.ts'
import { renderAnswer } from '../render.ts'

const call = { timeoutMs: ANSWER_GRACE_MS }
/** How long `run` (without `--follow`) and each `chat` turn wait for the run's end. */
const TURN_WAIT_MS = 60_000

export async function createSession(ctx: CommandContext, profile: string): Promise<ExitCode> {
  const session: SessionView = await ctx.client.createSession({ profile }, call)
  ctx.print(session, () => renderAnswer(session))
  return ExitCode.Ok
}

export async function showSession(ctx: CommandContext, sessionId: string): Promise<ExitCode> {
  const session = await ctx.client.getSession(sessionId, call)
  ctx.print(session, () => renderAnswer(session))
  return ExitCode.Ok
}

/** One line of a followed stream: the event, who it is from, and what it says. */
export function renderEvent(event: SessionEvent): string {
  const from =
    event.source === null
      ? 'parent'
      : `${String(event.source.name)}:${String(event.source.attemptId).slice(0, 8)}`
  const payload = event.payload as Readonly<Record<string, unknown>>
  const what =
    event.kind === 'record'
      ? JSON.stringify(payload).slice(0, 160)
      : [payload.name, payload.triggerType, payload.status, payload.outcome]
          .flatMap((v) => (typeof v === 'string' ? [v] : []))
          .join(' ')
  return `#${String(event.seq)} ${event.kind.padEnd(18)} ${from.padEnd(18)} ${what}`
}

/**
 * Queues a run of a hosted session. With `follow`, streams the run's events (the parent's
 * records, its children attributed, their lifecycle) until the run ends; otherwise one bounded
 * wait for its end. Exits 0 once the run completed.
 */
export async function runHosted(
  ctx: CommandContext,
  sessionId: string,
  input: string,
  options: { readonly follow?: boolean | undefined },
): Promise<ExitCode> {
  let run: HostedRunView = await ctx.client.startRun(sessionId, { input }, call)
  if (options.follow === true) {
    for await (const event of ctx.client.events({ runId: run.runId })) {
      ctx.print(event, () => renderEvent(event))
    }
    run = await ctx.client.getRun(run.runId, call)
  } else {
    run = await ctx.client.waitRun(run.runId, TURN_WAIT_MS, { timeoutMs: TURN_WAIT_MS + 5000 })
  }
  ctx.print(run, () => `${run.status}: ${run.output ?? ''}`)
  if (run.status === 'completed') return ExitCode.Ok
  return run.status === 'pending' || run.status === 'active'
    ? ExitCode.WaitExpired
    : ExitCode.NotCompleted
}

/** An interactive session on a hosted parent: each line is a run; its answer is printed. */
export async function chat(ctx: CommandContext, sessionId: string): Promise<ExitCode> {
  const lines = createInterface({ input: process.stdin, terminal: false })
  for await (const line of lines) {
    if (line.trim() === '') continue
    const started = await ctx.client.startRun(sessionId, { input: line }, call)
    const ended = await ctx.client.waitRun(started.runId, TURN_WAIT_MS, {
      timeoutMs: TURN_WAIT_MS + 5000,
    })
    ctx.print(ended, () => (ended.status === 'completed' ? (ended.output ?? '') : ended.status))
  }
  return ExitCode.Ok
}
