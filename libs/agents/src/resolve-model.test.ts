import { describe, expect, test } from 'vitest'
import { AgentsError } from './agents-error.ts'
import { resolveModel } from './resolve-model.ts'
import { createScriptRegistry } from './script-registry.ts'

const config = {
  openai: { apiKey: 'sk-test' },
  anthropic: { apiKey: 'ak-test' },
  openaiCompatible: { baseUrl: 'http://127.0.0.1:1/v1' },
  scripts: createScriptRegistry({ demo: { steps: [{ kind: 'text', text: 'hi' }] } }),
}

function codeOf(run: () => unknown): string | undefined {
  try {
    run()
  } catch (error) {
    return error instanceof AgentsError ? error.code : 'not-an-agents-error'
  }
  return undefined
}

describe('resolveModel', () => {
  test('openai-responses resolves to the OpenAI Responses API model', () => {
    const model = resolveModel('openai-responses:gpt-5', config)
    expect(model.provider).toBe('openai.responses')
    expect(model.modelId).toBe('gpt-5')
  })

  test('openai-chat resolves to the OpenAI Chat Completions model', () => {
    expect(resolveModel('openai-chat:gpt-4o', config).provider).toBe('openai.chat')
  })

  test('anthropic resolves to the Anthropic messages model', () => {
    const model = resolveModel('anthropic:claude-sonnet-4-5', config)
    expect(model.provider).toMatch(/^anthropic/)
    expect(model.modelId).toBe('claude-sonnet-4-5')
  })

  test('openai-compatible resolves through the configured base URL', () => {
    const model = resolveModel('openai-compatible:local-llama', config)
    expect(model.provider).toMatch(/^openai-compatible/)
    expect(model.modelId).toBe('local-llama')
  })

  test('openai-compatible without a configured base URL is a typed configuration error', () => {
    expect(codeOf(() => resolveModel('openai-compatible:x', {}))).toBe('MODEL_NOT_CONFIGURED')
    expect(
      codeOf(() => resolveModel('openai-compatible:x', { openaiCompatible: { baseUrl: '' } })),
    ).toBe('MODEL_NOT_CONFIGURED')
  })

  test('a provider without its API key in config is a typed error, never an environment fallback', () => {
    expect(codeOf(() => resolveModel('openai-chat:gpt-4o', {}))).toBe('MODEL_NOT_CONFIGURED')
    expect(codeOf(() => resolveModel('anthropic:claude', {}))).toBe('MODEL_NOT_CONFIGURED')
  })

  test('an unknown prefix is a typed error', () => {
    expect(codeOf(() => resolveModel('gemini:pro', config))).toBe('UNKNOWN_MODEL_PROVIDER')
  })

  test('a model id without a provider prefix is a typed error', () => {
    expect(codeOf(() => resolveModel('gpt-4o', config))).toBe('INVALID_MODEL_ID')
    expect(codeOf(() => resolveModel('openai-chat:', config))).toBe('INVALID_MODEL_ID')
  })

  test('scripted:<name> looks the script up in the registry', () => {
    expect(resolveModel('scripted:demo', config).provider).toBe('scripted')
    expect(codeOf(() => resolveModel('scripted:missing', config))).toBe('UNKNOWN_SCRIPT')
  })
})
