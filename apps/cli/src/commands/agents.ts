import { ANSWER_GRACE_MS, type CommandContext } from '../command-context.ts'
import { ExitCode } from '../exit-codes.ts'
import { renderContext } from '../render.ts'

export async function showAgentContext(ctx: CommandContext, agentId: string): Promise<ExitCode> {
  const context = await ctx.client.getAgentContext(agentId, { timeoutMs: ANSWER_GRACE_MS })
  ctx.print(context, () => renderContext(context))
  return ExitCode.Ok
}
