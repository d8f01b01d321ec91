import { MockLanguageModelV4 } from 'ai/test'
import { describe, expect, test } from 'vitest'
import { createAgentRuntime } from './agent-runtime.ts'
import { hangingStream, textStream } from '@baton/testing/stream-parts'

function runtimeWith(model: MockLanguageModelV4) {
  let next = 0
  return createAgentRuntime({
    resolveModel: () => model,
    defaultModel: 'test:model',
    tools: () => ({}),
    generateId: () => `id-${next++}`,
  })
}

describe('agent runtime', () => {
  test('an agent carries its session header and options, with the resolved model id recorded', async () => {
    const runtime = runtimeWith(new MockLanguageModelV4({ doStream: [textStream('x')] }))
    const agent = await runtime.createAgent({
      cwd: '/work',
      parentSession: 'p-1',
      delegationDepth: 1,
      options: { custom: 'yes' },
    })
    expect(agent.session.header).toEqual({
      id: agent.session.id,
      cwd: '/work',
      parentSession: 'p-1',
      delegationDepth: 1,
    })
    expect(agent.options).toEqual({ custom: 'yes', model: 'test:model' })
    expect(runtime.getAgent(agent.session.id)).toBe(agent)
  })

  test('a turn is logged as turn/start, its messages, then turn/end with the stop reason', async () => {
    const runtime = runtimeWith(new MockLanguageModelV4({ doStream: [textStream('hello back')] }))
    const agent = await runtime.createAgent({ cwd: '/work' })
    await agent.runTurn([{ type: 'text', text: 'hello' }]).outcome
    const events = agent.session.events()
    expect(events.map((event) => event.type)).toEqual([
      'turn/start',
      'message',
      'message',
      'turn/end',
    ])
    expect(events.map((event) => event.seq)).toEqual([0, 1, 2, 3])
    expect(events[3]).toMatchObject({ type: 'turn/end', stopReason: 'completed' })
  })

  test('an aborted turn still closes with turn/end so the log stays balanced', async () => {
    const model = new MockLanguageModelV4({
      doStream: (options) => Promise.resolve(hangingStream(options)),
    })
    const runtime = runtimeWith(model)
    const agent = await runtime.createAgent({ cwd: '/work' })
    const turn = agent.runTurn([{ type: 'text', text: 'go' }])
    turn.abort()
    expect((await turn.outcome).stopReason).toBe('aborted')
    expect(agent.session.events().at(-1)).toMatchObject({ type: 'turn/end', stopReason: 'aborted' })
  })

  test('an agent runs one turn at a time', async () => {
    const model = new MockLanguageModelV4({
      doStream: (options) => Promise.resolve(hangingStream(options)),
    })
    const agent = await runtimeWith(model).createAgent({ cwd: '/work' })
    const turn = agent.runTurn([{ type: 'text', text: 'one' }])
    expect(() => agent.runTurn([{ type: 'text', text: 'two' }])).toThrow(
      expect.objectContaining({ code: 'AGENT_BUSY' }),
    )
    await agent.dispose()
    expect((await turn.outcome).stopReason).toBe('aborted')
  })

  test('a disposed agent is unpublished and refuses new turns', async () => {
    const runtime = runtimeWith(new MockLanguageModelV4({ doStream: [textStream('x')] }))
    const agent = await runtime.createAgent({ cwd: '/work' })
    await agent.dispose()
    expect(runtime.getAgent(agent.session.id)).toBeUndefined()
    expect(() => agent.runTurn([{ type: 'text', text: 'x' }])).toThrow(
      expect.objectContaining({ code: 'AGENT_DISPOSED' }),
    )
  })

  test('an unbalanced seed is refused', async () => {
    const runtime = runtimeWith(new MockLanguageModelV4({ doStream: [textStream('x')] }))
    await expect(
      runtime.createAgent({ cwd: '/work', seed: [{ seq: 0, type: 'turn/start', turnId: 't' }] }),
    ).rejects.toThrow(/not finished/)
    expect(runtime.sessionIds()).toEqual([])
  })

  test('a persona referencing an unregistered variable is refused before anything is published', async () => {
    const runtime = runtimeWith(new MockLanguageModelV4({ doStream: [textStream('x')] }))
    await expect(
      runtime.createAgent({ cwd: '/work', persona: 'Hi {{unknownThing}}' }),
    ).rejects.toMatchObject({
      code: 'UNKNOWN_PERSONA_VARIABLE',
    })
    expect(runtime.sessionIds()).toEqual([])
  })
})
