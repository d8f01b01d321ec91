// Host-side consumption of continuations: claim (one bounded wait), keep the lease, settle.
import type { ClaimFence, ContinuationSettled } from '@baton/contracts'
import { ANSWER_GRACE_MS, type CommandContext } from '../command-context.ts'
import { ExitCode } from '../exit-codes.ts'
import { renderAnswer, renderClaim, renderSettled } from '../render.ts'

const call = { timeoutMs: ANSWER_GRACE_MS }

/**
 * One bounded wait for the session's next continuation. Nothing to claim within the bound is not
 * an error but the wait's end: exit 4, said on stderr, nothing on stdout.
 */
export async function claimContinuation(
  ctx: CommandContext,
  sessionId: string,
  options: { readonly timeoutMs: number; readonly leaseMs: number },
): Promise<ExitCode> {
  const claim = await ctx.client.claimContinuation(sessionId, options, {
    timeoutMs: options.timeoutMs + ANSWER_GRACE_MS,
  })
  if (claim === undefined) {
    ctx.io.stderr.write(
      `baton: no continuation of session ${sessionId} to claim after ${options.timeoutMs}ms\n`,
    )
    return ExitCode.WaitExpired
  }
  ctx.print(claim, () => renderClaim(claim))
  return ExitCode.Ok
}

export async function heartbeatContinuation(
  ctx: CommandContext,
  runId: string,
  fence: ClaimFence,
  leaseMs: number,
): Promise<ExitCode> {
  const renewed = await ctx.client.heartbeatContinuation(runId, fence, leaseMs, call)
  ctx.print(renewed, () => renderAnswer(renewed))
  return ExitCode.Ok
}

async function printSettled(
  ctx: CommandContext,
  answer: Promise<ContinuationSettled>,
): Promise<ExitCode> {
  const settled = await answer
  ctx.print(settled, () => renderSettled(settled))
  return ExitCode.Ok
}

export const completeContinuation = (ctx: CommandContext, runId: string, fence: ClaimFence) =>
  printSettled(ctx, ctx.client.completeContinuation(runId, fence, call))

export const failContinuation = (ctx: CommandContext, runId: string, fence: ClaimFence) =>
  printSettled(ctx, ctx.client.failContinuation(runId, fence, call))
