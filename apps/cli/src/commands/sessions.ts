// Hosted sessions: create one on a profile, run the parent on the fleet, follow its events, chat.
import { createInterface } from 'node:readline'
import { setTimeout as sleep } from 'node:timers/promises'
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

/** What ends a chat before the end of its input. */
const CHAT_EXIT = '/exit'
/** How long a broken event stream waits before it reconnects (after the last event it saw). */
const RECONNECT_MS = 1000

/** The line a chat prints when a run of the session ends: who answered which run, and how. */
function renderReply(run: HostedRunView): string {
  const what = run.status === 'completed' ? (run.output ?? '') : run.status
  return `parent (${run.triggerType} run ${run.runId.slice(0, 8)}): ${what}`
}

/**
 * An interactive session on a hosted parent. Each line of input is a user run; while the chat is
 * open, the session's events stream by as `run --follow` shows them (the parent's records, its
 * children attributed, the continuation runs their results cause), and the answer of every run
 * that ends is printed. The next line is read once the turn has answered (or its wait expired).
 * `/exit` or the end of the input ends the chat: runs still queued or to come stay on the fleet.
 * The input is read line by line, so a pipe works as well as a terminal.
 */
export async function chat(ctx: CommandContext, sessionId: string): Promise<ExitCode> {
  // Only what happens from now on: the session's earlier events are its history, not the chat's.
  let after = 0
  for await (const event of ctx.client.events({ sessionId }, { follow: false })) after = event.seq
  // Every run that ended while the chat was open, and the turn waiting for one, by run id.
  const replies = new Map<string, HostedRunView>()
  const turns = new Map<string, (run: HostedRunView) => void>()
  const stop = new AbortController()
  const follower = (async () => {
    while (!stop.signal.aborted) {
      try {
        for await (const event of ctx.client.events(
          { sessionId },
          { after, signal: stop.signal },
        )) {
          after = event.seq
          ctx.print(event, () => renderEvent(event))
          if (event.kind !== 'run_ended' || event.runId === null) continue
          const run = await ctx.client.getRun(event.runId, call)
          ctx.print(run, () => renderReply(run))
          replies.set(run.runId, run)
          turns.get(run.runId)?.(run)
        }
      } catch (error) {
        if (stop.signal.aborted) return
        // The stream broke (an API restart, a cut connection): resume after the last event seen.
        ctx.io.stderr.write(`baton: the event stream broke (${String(error)}); reconnecting\n`)
        await sleep(RECONNECT_MS)
      }
    }
  })()
  let last: HostedRunView | undefined
  const lines = createInterface({ input: ctx.io.stdin, terminal: false, crlfDelay: Infinity })
  try {
    for await (const line of lines) {
      const input = line.trim()
      if (input === CHAT_EXIT) break
      if (input === '') continue
      const { runId } = await ctx.client.startRun(sessionId, { input: line }, call)
      const answer = new Promise<HostedRunView>((resolve) => {
        const seen = replies.get(runId)
        if (seen === undefined) turns.set(runId, resolve)
        else resolve(seen)
      })
      last = await untilAnswered(ctx, runId, answer)
      turns.delete(runId)
      if (last.status === 'pending' || last.status === 'active') {
        ctx.io.stderr.write(
          `baton: run ${runId} is still ${last.status} after ${String(TURN_WAIT_MS)}ms\n`,
        )
      }
    }
  } finally {
    // Leaving the loop does not close the interface: closed, it stops reading the input, so
    // `/exit` ends the process while the input is still open.
    lines.close()
    stop.abort()
    await follower
  }
  if (last === undefined || last.status === 'completed') return ExitCode.Ok
  return last.status === 'pending' || last.status === 'active'
    ? ExitCode.WaitExpired
    : ExitCode.NotCompleted
}

/**
 * One chat turn's bounded wait: the run once the stream printed its reply, or the run as it is
 * when `TURN_WAIT_MS` passed without that.
 */
async function untilAnswered(
  ctx: CommandContext,
  runId: string,
  answer: Promise<HostedRunView>,
): Promise<HostedRunView> {
  let timer: NodeJS.Timeout | undefined
  const expired = new Promise<HostedRunView>((resolve, reject) => {
    timer = setTimeout(() => {
      ctx.client.getRun(runId, call).then(resolve, reject)
    }, TURN_WAIT_MS)
  })
  try {
    return await Promise.race([answer, expired])
  } finally {
    clearTimeout(timer)
  }
}
