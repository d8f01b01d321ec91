// A session's parent runs, for a parent agent kept outside Baton: create, read, settle.
import type { RunView } from '@baton/contracts'
import { ANSWER_GRACE_MS, type CommandContext } from '../command-context.ts'
import { ExitCode } from '../exit-codes.ts'
import { renderRun } from '../render.ts'

const call = { timeoutMs: ANSWER_GRACE_MS }

async function printRun(ctx: CommandContext, answer: Promise<RunView>): Promise<ExitCode> {
  const run = await answer
  ctx.print(run, () => renderRun(run))
  return ExitCode.Ok
}

/** A user run, or with `consume` an explicit run of those suppressed results. */
export const createRun = (ctx: CommandContext, sessionId: string, consume?: readonly string[]) =>
  printRun(ctx, ctx.client.createRun(sessionId, consume === undefined ? {} : { consume }, call))

export const showRun = (ctx: CommandContext, runId: string) =>
  printRun(ctx, ctx.client.getRun(runId, call))

/** `consumed`: results held for the run that it consumed itself (by waiting on them). */
export const completeRun = (ctx: CommandContext, runId: string, consumed?: readonly string[]) =>
  printRun(ctx, ctx.client.completeRun(runId, consumed === undefined ? {} : { consumed }, call))

export const failRun = (ctx: CommandContext, runId: string) =>
  printRun(ctx, ctx.client.failRun(runId, call))

export const cancelRun = (ctx: CommandContext, runId: string) =>
  printRun(ctx, ctx.client.cancelRun(runId, call))
