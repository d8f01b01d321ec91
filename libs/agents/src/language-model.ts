import type { LanguageModel } from 'ai'

/**
 * The AI SDK 7 language-model specification (v4), derived from `ai`'s public `LanguageModel` union
 * so that this library does not depend on `@ai-sdk/provider` directly: `ai` pins the version the
 * loop actually speaks, and deriving from it keeps the two in lockstep.
 */
export type LanguageModelV4 = Extract<LanguageModel, { readonly specificationVersion: 'v4' }>
export type LanguageModelV4CallOptions = Parameters<LanguageModelV4['doStream']>[0]
export type LanguageModelV4GenerateResult = Awaited<ReturnType<LanguageModelV4['doGenerate']>>
export type LanguageModelV4StreamResult = Awaited<ReturnType<LanguageModelV4['doStream']>>
export type LanguageModelV4StreamPart =
  LanguageModelV4StreamResult['stream'] extends ReadableStream<infer Part> ? Part : never
export type LanguageModelV4Content = LanguageModelV4GenerateResult['content'][number]
export type LanguageModelV4FinishReason = LanguageModelV4GenerateResult['finishReason']
export type LanguageModelV4Usage = LanguageModelV4GenerateResult['usage']
