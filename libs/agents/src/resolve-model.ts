import { createAnthropic } from '@ai-sdk/anthropic'
import { createOpenAI } from '@ai-sdk/openai'
import { createOpenAICompatible } from '@ai-sdk/openai-compatible'
import { ModelProviderPrefix } from '@baton/contracts'
import { AgentsError, AgentsErrorCode } from './agents-error.ts'
import type { LanguageModelV4 } from './language-model.ts'
import type { ScriptRegistry } from './script-registry.ts'
import { createScriptedModel } from './scripted-model.ts'

/**
 * Everything model resolution may need, passed in explicitly. The library never reads
 * `process.env`: an app's `loadConfig(env)` builds this once. Keys are required where the provider
 * needs one, so a missing key fails here, loudly, instead of the SDK silently falling back to the
 * environment.
 */
export interface ModelConfig {
  readonly openai?: {
    readonly apiKey: string
    readonly baseUrl?: string
    readonly organization?: string
    readonly project?: string
  }
  readonly anthropic?: { readonly apiKey: string; readonly baseUrl?: string }
  readonly openaiCompatible?: {
    readonly baseUrl: string
    readonly apiKey?: string
    /** Provider name used in provider-options keys and telemetry; defaults to `openai-compatible`. */
    readonly name?: string
    readonly headers?: Readonly<Record<string, string>>
  }
  readonly scripts?: ScriptRegistry
}

export { ModelProviderPrefix }

/** Resolve `<provider>:<model>` to an AI SDK language model (spec v4). */
export function resolveModel(modelId: string, config: ModelConfig): LanguageModelV4 {
  const separator = modelId.indexOf(':')
  const prefix = separator === -1 ? '' : modelId.slice(0, separator)
  const name = separator === -1 ? '' : modelId.slice(separator + 1)
  if (separator === -1 || name === '') {
    throw new AgentsError(
      AgentsErrorCode.INVALID_MODEL_ID,
      `Model id "${modelId}" must look like "<provider>:<model>", e.g. "anthropic:claude-sonnet-4-5" or "scripted:demo".`,
    )
  }
  const provider = prefix as ModelProviderPrefix
  switch (provider) {
    case ModelProviderPrefix.OPENAI_RESPONSES:
      return openaiProvider(modelId, config).responses(name)
    case ModelProviderPrefix.OPENAI_CHAT:
      return openaiProvider(modelId, config).chat(name)
    case ModelProviderPrefix.ANTHROPIC: {
      const anthropic = config.anthropic ?? notConfigured(modelId, 'anthropic.apiKey')
      return createAnthropic({
        apiKey: anthropic.apiKey,
        ...(anthropic.baseUrl === undefined ? {} : { baseURL: anthropic.baseUrl }),
      }).languageModel(name)
    }
    case ModelProviderPrefix.OPENAI_COMPATIBLE: {
      const compatible =
        config.openaiCompatible ?? notConfigured(modelId, 'openaiCompatible.baseUrl')
      if (compatible.baseUrl === '') notConfigured(modelId, 'openaiCompatible.baseUrl')
      return createOpenAICompatible({
        name: compatible.name ?? 'openai-compatible',
        baseURL: compatible.baseUrl,
        includeUsage: true,
        ...(compatible.apiKey === undefined ? {} : { apiKey: compatible.apiKey }),
        ...(compatible.headers === undefined ? {} : { headers: { ...compatible.headers } }),
      }).chatModel(name)
    }
    case ModelProviderPrefix.SCRIPTED: {
      const scripts = config.scripts ?? notConfigured(modelId, 'scripts (a ScriptRegistry)')
      return createScriptedModel(scripts.get(name), { modelId: name })
    }
    default:
      throw new AgentsError(
        AgentsErrorCode.UNKNOWN_MODEL_PROVIDER,
        `Model id "${modelId}" names unknown provider "${prefix}"; known: ${Object.values(ModelProviderPrefix).join(', ')}.`,
      )
  }
}

function openaiProvider(modelId: string, config: ModelConfig) {
  const openai = config.openai ?? notConfigured(modelId, 'openai.apiKey')
  return createOpenAI({
    apiKey: openai.apiKey,
    ...(openai.baseUrl === undefined ? {} : { baseURL: openai.baseUrl }),
    ...(openai.organization === undefined ? {} : { organization: openai.organization }),
    ...(openai.project === undefined ? {} : { project: openai.project }),
  })
}

function notConfigured(modelId: string, setting: string): never {
  throw new AgentsError(
    AgentsErrorCode.MODEL_NOT_CONFIGURED,
    `Model "${modelId}" needs model config "${setting}"; set it in the app config.`,
  )
}
