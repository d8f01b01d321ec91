/**
 * The model providers a `<provider>:<model>` id may name: the one list model resolution
 * (`resolveModel` in libs/agents) and configuration checks (profiles) agree on.
 */
export const ModelProviderPrefix = {
  OPENAI_RESPONSES: 'openai-responses',
  OPENAI_CHAT: 'openai-chat',
  ANTHROPIC: 'anthropic',
  OPENAI_COMPATIBLE: 'openai-compatible',
  SCRIPTED: 'scripted',
} as const
export type ModelProviderPrefix = (typeof ModelProviderPrefix)[keyof typeof ModelProviderPrefix]

const PROVIDERS: ReadonlySet<string> = new Set(Object.values(ModelProviderPrefix))

/** What is wrong with a model id (`undefined` when it names a known provider and a model). */
export function modelIdProblem(modelId: string): string | undefined {
  const separator = modelId.indexOf(':')
  if (separator <= 0 || separator === modelId.length - 1)
    return `model id "${modelId}" must look like "<provider>:<model>", e.g. "scripted:demo"`
  const provider = modelId.slice(0, separator)
  if (!PROVIDERS.has(provider))
    return `model id "${modelId}" names unknown provider "${provider}" (known: ${[...PROVIDERS].join(', ')})`
  return undefined
}
