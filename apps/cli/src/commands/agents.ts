import { ANSWER_GRACE_MS, type CommandContext } from '../command-context.ts'
import { ExitCode } from '../exit-codes.ts'
import { renderHistory } from '../render.ts'

export async function showAgentHistory(ctx: CommandContext, agentId: string): Promise<ExitCode> {
  const context = await ctx.client.getAgentHistory(agentId, { timeoutMs: ANSWER_GRACE_MS })
  ctx.print(context, () => renderHistory(context))
  return ExitCode.Ok
}
