// Host-side consumption of continuations: claim (one bounded wait), keep the lease, conclude.
import type { ClaimFence, ContinuationConclusion } from '@baton/contracts'
import { ANSWER_GRACE_MS, type CommandContext } from '../command-context.ts'
import { ExitCode } from '../exit-codes.ts'
import { renderAnswer, renderClaim, renderConclusion } from '../render.ts'

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

async function printConclusion(
  ctx: CommandContext,
  answer: Promise<ContinuationConclusion>,
): Promise<ExitCode> {
  const conclusion = await answer
  ctx.print(conclusion, () => renderConclusion(conclusion))
  return ExitCode.Ok
}

export const completeContinuation = (ctx: CommandContext, runId: string, fence: ClaimFence) =>
  printConclusion(ctx, ctx.client.completeContinuation(runId, fence, call))

export const failContinuation = (ctx: CommandContext, runId: string, fence: ClaimFence) =>
  printConclusion(ctx, ctx.client.failContinuation(runId, fence, call))
