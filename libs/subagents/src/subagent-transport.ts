import { z } from 'zod'
import { SubagentError } from './errors.ts'
import type { SubagentSpec } from './subagent-spec.ts'

/**
 * How a host runs a markdown subagent. By default in-process (`spawn`, a fresh child agent); with
 * `provider: acp` in the frontmatter, as an external Agent Client Protocol agent started with
 * `command` and `args`. Only in-process children can be steered: ACP offers no message injection.
 */
export type SubagentTransport =
  | { readonly kind: 'spawn' }
  | { readonly kind: 'acp'; readonly command: string; readonly args: readonly string[] }

const acpSchema = z.object({
  provider: z.literal('acp'),
  command: z.string().min(1, 'an acp subagent needs `command`'),
  args: z
    .union([
      z.array(z.string()),
      z.string().transform((s) => s.split(/\s+/).filter((a) => a !== '')),
    ])
    .optional(),
})

export function subagentTransport(spec: SubagentSpec): SubagentTransport {
  const provider = spec.metadata.provider
  if (provider === undefined || provider === 'spawn') return { kind: 'spawn' }
  const parsed = acpSchema.safeParse(spec.metadata)
  if (!parsed.success) {
    throw new SubagentError(
      'INVALID_SPEC',
      `Subagent "${spec.name}": ${parsed.error.issues.map((i) => `\`${i.path.join('.')}\` ${i.message}`).join('; ')} (provider is \`spawn\` or \`acp\`).`,
    )
  }
  return { kind: 'acp', command: parsed.data.command, args: parsed.data.args ?? [] }
}

/** Whether runs of this transport accept steering messages. */
export function transportSteerable(transport: SubagentTransport): boolean {
  return transport.kind === 'spawn'
}
