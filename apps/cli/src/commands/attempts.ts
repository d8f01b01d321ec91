import { ANSWER_GRACE_MS, type CommandContext } from '../command-context.ts'
import { ExitCode } from '../exit-codes.ts'
import { renderAnswer, renderAttempt } from '../render.ts'

const call = { timeoutMs: ANSWER_GRACE_MS }

export async function showAttempt(ctx: CommandContext, attemptId: string): Promise<ExitCode> {
  const view = await ctx.client.getAttempt(attemptId, call)
  ctx.print(view, () => renderAttempt(view))
  return ExitCode.Ok
}

/** One bounded wait: the exit code says completed, ended otherwise, or still going. */
export async function waitAttempt(
  ctx: CommandContext,
  attemptId: string,
  timeoutMs: number,
): Promise<ExitCode> {
  const view = await ctx.client.wait(attemptId, timeoutMs, {
    timeoutMs: timeoutMs + ANSWER_GRACE_MS,
  })
  return ctx.finishWait(view, timeoutMs, () => renderAttempt(view))
}

/** An action the API accepted (`202`): its answer is the whole result. */
async function printAccepted(
  ctx: CommandContext,
  answer: Promise<Readonly<Record<string, unknown>>>,
): Promise<ExitCode> {
  const accepted = await answer
  ctx.print(accepted, () => renderAnswer(accepted))
  return ExitCode.Ok
}

export const cancelAttempt = (ctx: CommandContext, attemptId: string, reason?: string) =>
  printAccepted(ctx, ctx.client.cancel(attemptId, reason, call))

export const steerAttempt = (ctx: CommandContext, attemptId: string, text: string) =>
  printAccepted(ctx, ctx.client.steer(attemptId, text, call))
