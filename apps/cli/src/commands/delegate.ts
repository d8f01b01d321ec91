import { randomUUID } from 'node:crypto'
import type { CallOptions, DelegateInput } from '@baton/client'
import { isTerminalView, type AnyAttemptView } from '@baton/contracts'
import { ANSWER_GRACE_MS, type CommandContext } from '../command-context.ts'
import { ExitCode } from '../exit-codes.ts'
import { startProgressLine } from '../progress.ts'
import { renderAccepted, renderAttempt } from '../render.ts'

export interface DelegateOptions {
  readonly session?: string
  readonly agent?: string
  readonly parentRun?: string
  readonly wait?: number
  readonly idempotencyKey?: string
}

/**
 * Each status read of the progress line is one bounded wait of at most this long: it answers at
 * once when the attempt ends, and otherwise refreshes the status (accepted → running) this often.
 */
const STATUS_WAIT_MS = 1_000

/**
 * `baton delegate NAME PROMPT`: accept a delegation, or with `--wait` one bounded submit-and-wait.
 *
 * Every delegation carries an Idempotency-Key (the caller's or a generated one). The progress line
 * needs it: the submit-and-wait names its attempt only when it answers, so the line learns the
 * attempt id by sending the same request under the same key without `wait`, which answers the
 * attempt the submit created (or creates it, and the submit then answers that one) and writes
 * nothing more.
 */
export async function delegate(
  ctx: CommandContext,
  name: string,
  prompt: string,
  options: DelegateOptions,
): Promise<ExitCode> {
  const sessionId = options.session ?? `cli-${randomUUID()}`
  const idempotencyKey = options.idempotencyKey ?? `cli-${randomUUID()}`
  const input: DelegateInput = {
    sessionId,
    name,
    prompt,
    ...(options.agent === undefined ? {} : { agentId: options.agent }),
    ...(options.parentRun === undefined ? {} : { parentRunId: options.parentRun }),
  }
  const waitMs = options.wait
  if (waitMs === undefined) {
    const accepted = await ctx.client.delegate(input, {
      idempotencyKey,
      timeoutMs: ANSWER_GRACE_MS,
    })
    ctx.print(accepted, () => renderAccepted(accepted, sessionId))
    return ExitCode.Ok
  }
  const submit = ctx.client.delegateAndWait(input, waitMs, {
    idempotencyKey,
    timeoutMs: waitMs + ANSWER_GRACE_MS,
  })
  const live = ctx.io.stdout.isTTY === true && !ctx.json
  const view = live ? await withProgress(ctx, input, idempotencyKey, submit) : await submit
  return ctx.finishWait(view, waitMs, () => renderAttempt(view))
}

/** Shows the progress line on stdout while `submit` is pending; its answer alone decides the outcome. */
async function withProgress(
  ctx: CommandContext,
  input: DelegateInput,
  idempotencyKey: string,
  submit: Promise<AnyAttemptView>,
): Promise<AnyAttemptView> {
  const line = startProgressLine(ctx.io.stdout)
  const stopped = new AbortController()
  const watched = watchStatus(ctx, input, { idempotencyKey, signal: stopped.signal }, (known) =>
    line.update(known),
  )
  try {
    return await submit
  } finally {
    stopped.abort()
    await watched
    line.stop()
  }
}

async function watchStatus(
  ctx: CommandContext,
  input: DelegateInput,
  options: CallOptions & { readonly signal: AbortSignal },
  update: (known: { status?: string; attemptId?: string }) => void,
): Promise<void> {
  try {
    const { attemptId } = await ctx.client.delegate(input, options)
    update({ attemptId })
    // The replay answers the accepted shape whatever the attempt's state: read the state at once
    // (a wait of 0), then in bounded waits, each held by the server, so never a tight loop.
    for (let waitMs = 0; ; waitMs = STATUS_WAIT_MS) {
      const view = await ctx.client.wait(attemptId, waitMs, {
        signal: options.signal,
        timeoutMs: waitMs + ANSWER_GRACE_MS,
      })
      update({ status: view.status })
      if (isTerminalView(view)) return
    }
  } catch {
    // The line is decoration: a failed status read (or the stop when the submit answered) only
    // freezes the status shown; the elapsed time keeps moving and the submit decides the outcome.
  }
}
