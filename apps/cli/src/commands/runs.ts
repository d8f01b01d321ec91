// A session's parent runs, for a parent agent kept outside Baton: create, keep, read, end.
import type { RunConsumption, RunView } from '@baton/contracts'
import { ANSWER_GRACE_MS, type CommandContext } from '../command-context.ts'
import { ExitCode } from '../exit-codes.ts'
import { renderAnswer, renderRun } from '../render.ts'

const call = { timeoutMs: ANSWER_GRACE_MS }

async function printRun(
  ctx: CommandContext,
  answer: Promise<RunView | RunConsumption>,
): Promise<ExitCode> {
  const run = await answer
  ctx.print(run, () => renderRun(run))
  return ExitCode.Ok
}

/**
 * A user run, or with `consume` an explicit run of those suppressed results (printed with their
 * receipts); `leaseMs` absent: the API's default lease.
 */
export const createRun = (
  ctx: CommandContext,
  sessionId: string,
  options: {
    readonly consume?: readonly string[] | undefined
    readonly leaseMs?: number | undefined
  },
) =>
  printRun(
    ctx,
    ctx.client.createRun(
      sessionId,
      {
        ...(options.consume === undefined ? {} : { consume: options.consume }),
        ...(options.leaseMs === undefined ? {} : { leaseMs: options.leaseMs }),
      },
      call,
    ),
  )

export const showRun = (ctx: CommandContext, runId: string) =>
  printRun(ctx, ctx.client.getRun(runId, call))

export async function heartbeatRun(
  ctx: CommandContext,
  runId: string,
  leaseMs: number,
): Promise<ExitCode> {
  const renewed = await ctx.client.heartbeatRun(runId, leaseMs, call)
  ctx.print(renewed, () => renderAnswer(renewed))
  return ExitCode.Ok
}

/** `consumed`: results held for the run that it consumed itself (printed with their receipts). */
export const completeRun = (ctx: CommandContext, runId: string, consumed?: readonly string[]) =>
  printRun(ctx, ctx.client.completeRun(runId, consumed === undefined ? {} : { consumed }, call))

export const failRun = (ctx: CommandContext, runId: string) =>
  printRun(ctx, ctx.client.failRun(runId, call))

/** `cascade`: every attempt below the run that has not finished is cancelled too. */
export const cancelRun = (ctx: CommandContext, runId: string, cascade?: boolean) =>
  printRun(ctx, ctx.client.cancelRun(runId, cascade === true ? { cascade } : {}, call))
