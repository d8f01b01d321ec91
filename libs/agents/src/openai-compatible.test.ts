import { mkdtemp, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterEach, describe, expect, test } from 'vitest'
import { createAgentRuntime } from './agent-runtime.ts'
import { createSpawnProvider } from './local-subagent-provider.ts'
import { resolveModel } from './resolve-model.ts'
import { runAgent } from './run-agent.ts'
import { startFakeChatCompletionsServer } from '@baton/testing/fake-chat-completions-server'
import type { FakeChatCompletionsServer } from '@baton/testing/fake-chat-completions-server'
import { createWorkspaceTools } from './workspace-tools.ts'

let server: FakeChatCompletionsServer | undefined
afterEach(async () => {
  await server?.close()
  server = undefined
})

async function workspace(): Promise<string> {
  const cwd = await mkdtemp(path.join(tmpdir(), 'baton-oc-'))
  await writeFile(path.join(cwd, 'notes.txt'), 'the launch code is banana\n')
  return cwd
}

describe('openai-compatible provider against a fake chat-completions server', () => {
  test('a tool call round trip: the model asks for view, the loop runs it, the model answers', async () => {
    server = await startFakeChatCompletionsServer([
      { kind: 'tool-call', name: 'view', arguments: { path: 'notes.txt' } },
      { kind: 'text', text: 'The code is banana.' },
    ])
    const cwd = await workspace()
    const model = resolveModel('openai-compatible:fake-model', {
      openaiCompatible: { baseUrl: server.baseUrl, apiKey: 'test-key' },
    })
    const outcome = await runAgent({
      model,
      system: 'Use tools.',
      prompt: 'What is in notes.txt?',
      tools: createWorkspaceTools({ cwd }),
    })

    expect(outcome).toMatchObject({
      stopReason: 'completed',
      output: [{ type: 'text', text: 'The code is banana.' }],
      steps: 2,
    })
    expect(outcome.usage).toEqual({ inputTokens: 22, outputTokens: 10, totalTokens: 32 })
    expect(server.requests).toHaveLength(2)
    expect(server.requests[0]?.stream).toBe(true)
    expect(server.requests[0]?.tools?.map((t) => t.function.name).sort()).toEqual([
      'grep',
      'list',
      'view',
    ])
    const toolMessage = server.requests[1]?.messages.find((message) => message.role === 'tool')
    expect(toolMessage?.tool_call_id).toBe('call_1')
    expect(JSON.stringify(toolMessage?.content)).toContain('the launch code is banana')
  })

  test('an aborted stream ends the run as aborted with the partial text, and the connection is dropped', async () => {
    server = await startFakeChatCompletionsServer([{ kind: 'hang', text: 'Thinking about' }])
    const model = resolveModel('openai-compatible:fake-model', {
      openaiCompatible: { baseUrl: server.baseUrl },
    })
    const controller = new AbortController()
    const run = runAgent({ model, prompt: 'long task', signal: controller.signal })
    await server.hangStarted
    await new Promise((resolve) => setTimeout(resolve, 20))
    controller.abort()
    const outcome = await run
    expect(outcome.stopReason).toBe('aborted')
    expect(outcome.output).toEqual([{ type: 'text', text: 'Thinking about' }])
    await server.clientDisconnected
    expect(server.requests).toHaveLength(1)
  })

  test('a spawned child runs on the openai-compatible model end to end', async () => {
    server = await startFakeChatCompletionsServer([
      { kind: 'tool-call', name: 'list', arguments: { path: '.' } },
      { kind: 'text', text: 'One file: notes.txt.' },
    ])
    const cwd = await workspace()
    const config = { openaiCompatible: { baseUrl: server.baseUrl } }
    const runtime = createAgentRuntime({
      resolveModel: (id) => resolveModel(id, config),
      defaultModel: 'openai-compatible:fake-model',
    })
    const parent = await runtime.createAgent({ cwd })
    const run = await createSpawnProvider({ runtime }).start({
      prompt: [{ type: 'text', text: 'List the workspace.' }],
      parent,
      signal: new AbortController().signal,
    })
    expect(await run.result).toEqual({
      output: [{ type: 'text', text: 'One file: notes.txt.' }],
      stopReason: 'completed',
      // The tokens the fake server reported over both model calls: what the tokens budget counts.
      usage: { inputTokens: 22, outputTokens: 10 },
    })
    expect(JSON.stringify(server.requests[1]?.messages)).toContain('notes.txt')
    await run.dispose()
  })
})
