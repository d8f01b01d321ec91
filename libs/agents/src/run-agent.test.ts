import { APICallError, experimental_createSteering, jsonSchema, tool } from 'ai'
import { MockLanguageModelV4 } from 'ai/test'
import { describe, expect, test } from 'vitest'
import type { LanguageModelV4CallOptions } from './language-model.ts'
import { runAgent } from './run-agent.ts'
import {
  deferred,
  hangingStream,
  promptTexts,
  textStream,
  toolCallStream,
} from '@baton/testing/stream-parts'

const lookup = tool({
  inputSchema: jsonSchema<{ key: string }>({
    type: 'object',
    properties: { key: { type: 'string' } },
  }),
  execute: ({ key }) => ({ value: `value-of-${key}` }),
})

describe('runAgent', () => {
  test('tool calls are executed between steps and their results reach the next model call', async () => {
    const model = new MockLanguageModelV4({
      doStream: [toolCallStream('lookup', { key: 'a' }), textStream('a is known')],
    })
    const outcome = await runAgent({
      model,
      system: 'be brief',
      prompt: 'what is a?',
      tools: { lookup },
    })
    expect(outcome.stopReason).toBe('completed')
    expect(outcome.steps).toBe(2)
    expect(outcome.output).toEqual([{ type: 'text', text: 'a is known' }])
    expect(JSON.stringify(model.doStreamCalls[1]?.prompt)).toContain('value-of-a')
    expect(model.doStreamCalls[0]?.prompt[0]).toEqual({ role: 'system', content: 'be brief' })
  })

  test('usage is summed over steps', async () => {
    const model = new MockLanguageModelV4({
      doStream: [toolCallStream('lookup', { key: 'a' }), textStream('ok')],
    })
    const outcome = await runAgent({ model, prompt: 'x', tools: { lookup } })
    expect(outcome.usage).toEqual({ inputTokens: 6, outputTokens: 4, totalTokens: 10 })
  })

  test('history comes before the prompt and the run records the prompt and responses as messages', async () => {
    const model = new MockLanguageModelV4({ doStream: [textStream('second answer')] })
    const outcome = await runAgent({
      model,
      prompt: 'second question',
      history: [
        { role: 'user', content: 'first question' },
        { role: 'assistant', content: 'first answer' },
      ],
    })
    const call = model.doStreamCalls[0]
    expect(call === undefined ? [] : promptTexts(call)).toEqual([
      'first question',
      'first answer',
      'second question',
    ])
    expect(outcome.messages.map((message) => message.role)).toEqual(['user', 'assistant'])
  })

  test('a steering message sent during a step is injected before the next step', async () => {
    const firstStepStarted = deferred()
    const releaseFirstStep = deferred()
    const calls: LanguageModelV4CallOptions[] = []
    const model = new MockLanguageModelV4({
      doStream: async (options) => {
        calls.push(options)
        if (calls.length === 1) {
          firstStepStarted.resolve()
          await releaseFirstStep.promise
          return toolCallStream('lookup', { key: 'a' })
        }
        return textStream('steered answer')
      },
    })
    const steering = experimental_createSteering()
    const run = runAgent({ model, prompt: 'start', tools: { lookup }, steering })
    await firstStepStarted.promise
    const delivered = steering.steer('focus on b instead')
    releaseFirstStep.resolve()
    const outcome = await run
    expect((await delivered).type).toBe('delivered')
    const first = calls[0]
    const second = calls[1]
    expect(first === undefined ? [] : promptTexts(first)).not.toContain('focus on b instead')
    expect(second === undefined ? [] : promptTexts(second)).toContain('focus on b instead')
    expect(
      outcome.messages.some((message) => JSON.stringify(message).includes('focus on b instead')),
    ).toBe(true)
  })

  test('an abort mid-step ends the run as aborted and makes no further model calls', async () => {
    const model = new MockLanguageModelV4({
      doStream: (options) => Promise.resolve(hangingStream(options)),
    })
    const controller = new AbortController()
    const run = runAgent({ model, prompt: 'x', signal: controller.signal })
    await new Promise((resolve) => setTimeout(resolve, 20))
    controller.abort()
    const outcome = await run
    expect(outcome.stopReason).toBe('aborted')
    expect(outcome.failureCategory).toBe('cancelled')
    await new Promise((resolve) => setTimeout(resolve, 30))
    expect(model.doStreamCalls).toHaveLength(1)
  })

  test('an already-aborted signal makes no model call at all', async () => {
    const model = new MockLanguageModelV4({ doStream: [textStream('never')] })
    const outcome = await runAgent({ model, prompt: 'x', signal: AbortSignal.abort() })
    expect(outcome.stopReason).toBe('aborted')
    expect(model.doStreamCalls).toHaveLength(0)
  })

  test('a provider error ends the run with stop reason error and a safe category, never a stack trace', async () => {
    const model = new MockLanguageModelV4({
      doStream: () => {
        throw new APICallError({
          message: 'quota exceeded for key sk-live-123',
          url: 'https://api.example/v1',
          requestBodyValues: {},
          statusCode: 429,
          isRetryable: false,
        })
      },
    })
    const outcome = await runAgent({ model, prompt: 'x', maxRetries: 0 })
    expect(outcome.stopReason).toBe('error')
    expect(outcome.failureCategory).toBe('rate_limited')
    expect(JSON.stringify(outcome)).not.toMatch(/sk-live-123|at .*\.js/)
  })

  test('finish reason length maps to max-tokens', async () => {
    const model = new MockLanguageModelV4({ doStream: [textStream('cut', 'length')] })
    expect((await runAgent({ model, prompt: 'x' })).stopReason).toBe('max-tokens')
  })

  test('finish reason content-filter maps to refusal', async () => {
    const model = new MockLanguageModelV4({ doStream: [textStream('no', 'content-filter')] })
    expect((await runAgent({ model, prompt: 'x' })).stopReason).toBe('refusal')
  })

  test('running out of steps while the model still calls tools is an error, not completion', async () => {
    const model = new MockLanguageModelV4({
      doStream: [
        toolCallStream('lookup', { key: 'a' }, 'c1'),
        toolCallStream('lookup', { key: 'b' }, 'c2'),
      ],
    })
    const outcome = await runAgent({ model, prompt: 'x', tools: { lookup }, maxSteps: 2 })
    expect(outcome.stopReason).toBe('error')
    expect(outcome.failureCategory).toBe('max_steps_exceeded')
    expect(model.doStreamCalls).toHaveLength(2)
  })
})
