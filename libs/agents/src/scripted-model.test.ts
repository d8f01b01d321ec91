import { mkdtemp, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { generateText, jsonSchema, tool } from 'ai'
import { describe, expect, test } from 'vitest'
import { runAgent } from './run-agent.ts'
import { loadScriptDirectory } from './script-directory.ts'
import { createScriptRegistry } from './script-registry.ts'
import { createScriptedModel } from './scripted-model.ts'

const echoTool = tool({
  inputSchema: jsonSchema<{ word: string }>({
    type: 'object',
    properties: { word: { type: 'string' } },
  }),
  execute: ({ word }) => ({ echoed: word }),
})

describe('scripted model', () => {
  test('a text step streams its text and the run completes', async () => {
    const model = createScriptedModel({ steps: [{ kind: 'text', text: 'hello there' }] })
    const outcome = await runAgent({ model, prompt: 'hi' })
    expect(outcome.stopReason).toBe('completed')
    expect(outcome.output).toEqual([{ type: 'text', text: 'hello there' }])
    expect(outcome.usage.outputTokens).toBeGreaterThan(0)
  })

  test('a tool-calls step makes the loop run the tool and call the model again with its result', async () => {
    const model = createScriptedModel({
      steps: [
        { kind: 'tool-calls', calls: [{ toolName: 'echo', input: { word: 'ping' } }] },
        { kind: 'text', text: 'done' },
      ],
    })
    const outcome = await runAgent({ model, prompt: 'go', tools: { echo: echoTool } })
    expect(outcome.stopReason).toBe('completed')
    expect(model.calls).toHaveLength(2)
    expect(JSON.stringify(model.calls[1]?.prompt)).toContain('"echoed":"ping"')
  })

  test('a refusal step ends the run with stop reason refusal', async () => {
    const model = createScriptedModel({ steps: [{ kind: 'refusal', text: 'I will not.' }] })
    const outcome = await runAgent({ model, prompt: 'do something bad' })
    expect(outcome.stopReason).toBe('refusal')
  })

  test('a max-tokens step ends the run with stop reason max-tokens and partial output', async () => {
    const model = createScriptedModel({ steps: [{ kind: 'max-tokens', text: 'The answer is' }] })
    const outcome = await runAgent({ model, prompt: 'long task' })
    expect(outcome.stopReason).toBe('max-tokens')
    expect(outcome.output).toEqual([{ type: 'text', text: 'The answer is' }])
  })

  test('a fail step ends the run with stop reason error and a safe category, not the message', async () => {
    const model = createScriptedModel({
      steps: [{ kind: 'fail', message: 'secret upstream detail' }],
    })
    const outcome = await runAgent({ model, prompt: 'x' })
    expect(outcome.stopReason).toBe('error')
    expect(outcome.failureCategory).toBe('model_error')
    expect(JSON.stringify(outcome)).not.toContain('secret upstream detail')
  })

  test('a hang step holds until the abort signal fires, then the run is aborted', async () => {
    const model = createScriptedModel({ steps: [{ kind: 'hang', text: 'thinking' }] })
    const controller = new AbortController()
    setTimeout(() => controller.abort(), 30)
    const outcome = await runAgent({ model, prompt: 'x', signal: controller.signal })
    expect(outcome.stopReason).toBe('aborted')
    expect(outcome.output).toEqual([{ type: 'text', text: 'thinking' }])
  })

  test('a delay is cut short by abort', async () => {
    const model = createScriptedModel({ steps: [{ kind: 'text', text: 'late', delayMs: 10_000 }] })
    const controller = new AbortController()
    setTimeout(() => controller.abort(), 20)
    const started = Date.now()
    const outcome = await runAgent({ model, prompt: 'x', signal: controller.signal })
    expect(outcome.stopReason).toBe('aborted')
    expect(Date.now() - started).toBeLessThan(2_000)
  })

  test('calling past the end of the script is a model error', async () => {
    const model = createScriptedModel({
      steps: [{ kind: 'tool-calls', calls: [{ toolName: 'echo', input: { word: 'a' } }] }],
    })
    const outcome = await runAgent({ model, prompt: 'x', tools: { echo: echoTool } })
    expect(outcome.stopReason).toBe('error')
    expect(outcome.failureCategory).toBe('model_error')
  })

  test('doGenerate serves the same script to generateText', async () => {
    const model = createScriptedModel({ steps: [{ kind: 'text', text: 'generated' }] })
    const result = await generateText({ model, prompt: 'x' })
    expect(result.text).toBe('generated')
    expect(result.finishReason).toBe('stop')
  })

  test('doGenerate maps a refusal to finish reason content-filter', async () => {
    const model = createScriptedModel({ steps: [{ kind: 'refusal' }] })
    const result = await generateText({ model, prompt: 'x' })
    expect(result.finishReason).toBe('content-filter')
  })

  test('each model built from a registered script starts at its first step', () => {
    const registry = createScriptRegistry({ demo: { steps: [{ kind: 'text', text: 'one' }] } })
    const first = createScriptedModel(registry.get('demo'))
    const second = createScriptedModel(registry.get('demo'))
    expect(first).not.toBe(second)
    expect(first.calls).toHaveLength(0)
    expect(second.calls).toHaveLength(0)
  })

  test('a recall step answers with the text of every user message it was given, one per line', async () => {
    const model = createScriptedModel({ steps: [{ kind: 'recall' }] })
    const outcome = await runAgent({
      model,
      history: [
        { role: 'user', content: 'first question' },
        { role: 'assistant', content: 'first answer' },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'second ' },
            { type: 'text', text: 'question' },
          ],
        },
        { role: 'assistant', content: 'second answer' },
      ],
      prompt: 'third question',
    })
    expect(outcome.stopReason).toBe('completed')
    expect(outcome.output).toEqual([
      { type: 'text', text: 'first question\nsecond question\nthird question' },
    ])
  })

  test('doGenerate serves a recall step as text with finish reason stop', async () => {
    const model = createScriptedModel({ steps: [{ kind: 'recall' }] })
    const result = await generateText({ model, system: 'rules', prompt: 'only this' })
    expect(result.text).toBe('only this')
    expect(result.finishReason).toBe('stop')
  })

  test('a script file may use a recall step', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'baton-scripts-'))
    await writeFile(
      path.join(dir, 'echo-history.json'),
      JSON.stringify({ steps: [{ kind: 'recall', delayMs: 5 }] }),
    )
    const registry = await loadScriptDirectory(dir)
    expect(registry.get('echo-history')).toEqual({ steps: [{ kind: 'recall', delayMs: 5 }] })
  })

  test('a resumed conversation plays resumeSteps; a fresh one plays steps', async () => {
    const script = {
      steps: [{ kind: 'text' as const, text: 'fresh' }],
      resumeSteps: [{ kind: 'text' as const, text: 'resumed' }],
    }
    const fresh = await generateText({ model: createScriptedModel(script), prompt: 'hello' })
    expect(fresh.text).toBe('fresh')
    const resumed = await runAgent({
      model: createScriptedModel(script),
      history: [
        { role: 'user', content: 'hello' },
        { role: 'assistant', content: 'fresh' },
      ],
      prompt: 'again',
    })
    expect(resumed.output).toEqual([{ type: 'text', text: 'resumed' }])
  })

  test('a request step answers with the tools offered and the tool results given', async () => {
    const model = createScriptedModel({
      steps: [
        { kind: 'tool-calls', calls: [{ toolName: 'lookup', input: { q: 'x' } }] },
        { kind: 'request' },
      ],
    })
    const outcome = await runAgent({
      model,
      prompt: 'go',
      tools: {
        lookup: tool({
          inputSchema: jsonSchema<{ q: string }>({ type: 'object' }),
          execute: ({ q }) => Promise.resolve({ found: q }),
        }),
      },
    })
    expect(outcome.output).toEqual([
      {
        type: 'text',
        text: JSON.stringify({
          tools: ['lookup'],
          toolResults: [{ toolName: 'lookup', output: { found: 'x' } }],
        }),
      },
    ])
  })
})
