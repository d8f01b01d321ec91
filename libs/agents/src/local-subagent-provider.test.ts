import { mkdtemp } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { jsonSchema, tool } from 'ai'
import type { ToolSet } from 'ai'
import { MockLanguageModelV4 } from 'ai/test'
import type { SubagentHistoryEvent, SubagentStartRequest } from '@baton/subagents'
import { beforeAll, describe, expect, test } from 'vitest'
import { createAgentRuntime } from './agent-runtime.ts'
import type { AgentRuntimeOptions, LocalAgent } from './agent-runtime.ts'
import type { LanguageModelV4, LanguageModelV4CallOptions } from './language-model.ts'
import { createForkProvider, createSpawnProvider } from './local-subagent-provider.ts'
import { resolveModel } from './resolve-model.ts'
import { createScriptRegistry } from './script-registry.ts'
import { createScriptedModel } from './scripted-model.ts'
import { historySuffix } from './session-events.ts'
import type { SessionEvent } from './session-events.ts'
import {
  deferred,
  hangingStream,
  promptTexts,
  textStream,
  toolCallStream,
} from '@baton/testing/stream-parts'

let cwd: string
beforeAll(async () => {
  cwd = await mkdtemp(path.join(tmpdir(), 'baton-agents-'))
})

function setup(models: Record<string, LanguageModelV4>, extra: Partial<AgentRuntimeOptions> = {}) {
  const runtime = createAgentRuntime({
    resolveModel: (id) => {
      const model = models[id]
      if (model === undefined) throw new Error(`no test model ${id}`)
      return model
    },
    defaultModel: 'child',
    ...extra,
  })
  return { runtime, spawn: createSpawnProvider({ runtime }), fork: createForkProvider({ runtime }) }
}

function request(
  parent: LocalAgent,
  overrides: Partial<SubagentStartRequest> = {},
): SubagentStartRequest {
  return {
    prompt: [{ type: 'text', text: 'child task' }],
    parent,
    signal: new AbortController().signal,
    agentOptions: { model: 'child' },
    ...overrides,
  }
}

function firstPrompt(model: MockLanguageModelV4): string[] {
  const call: LanguageModelV4CallOptions | undefined = model.doStreamCalls[0]
  return call === undefined ? [] : promptTexts(call)
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

describe('spawn and fork providers', () => {
  test('both advertise every start-time capability but history, which only spawn takes; only fork inherits parent context', () => {
    const { spawn, fork } = setup({})
    const all = { outputSchema: true, depthLimit: true, toolFilter: true, persona: true }
    expect(spawn.capabilities).toEqual({ ...all, history: true })
    expect(fork.capabilities).toEqual({ ...all, history: false })
    expect([spawn.name, spawn.inheritsParentContext]).toEqual(['spawn', false])
    expect([fork.name, fork.inheritsParentContext]).toEqual(['fork', true])
  })

  test('spawn publishes the child before start fulfils, with run id = child session id and lineage in its header', async () => {
    const child = new MockLanguageModelV4({ doStream: [textStream('child done')] })
    const { runtime, spawn } = setup({ child })
    const parent = await runtime.createAgent({
      cwd,
      delegationDepth: 2,
      options: { model: 'child' },
    })
    const run = await spawn.start(request(parent))
    expect(runtime.getAgent(run.id)).toBe(run.localAgent)
    expect(run.localAgent?.session.id).toBe(run.id)
    expect(run.localAgent?.session.header).toEqual({
      id: run.id,
      cwd,
      parentSession: parent.session.id,
      delegationDepth: 3,
    })
    expect(run.localAgent?.options.subagentDepth).toBe(3)
    expect(await run.result).toEqual({
      output: [{ type: 'text', text: 'child done' }],
      stopReason: 'completed',
      // The tokens the child's model calls spent: what its terminal commit stores.
      usage: {
        inputTokens: expect.any(Number) as unknown,
        outputTokens: expect.any(Number) as unknown,
      },
    })
    await run.dispose()
  })

  test('spawn starts the child with a fresh conversation, none of the parent history', async () => {
    const parentModel = new MockLanguageModelV4({ doStream: [textStream('parent answer')] })
    const child = new MockLanguageModelV4({ doStream: [textStream('child done')] })
    const { runtime, spawn } = setup({ parent: parentModel, child })
    const parent = await runtime.createAgent({ cwd, options: { model: 'parent' } })
    await parent.runTurn([{ type: 'text', text: 'parent question' }]).outcome
    const run = await spawn.start(request(parent))
    await run.result
    expect(firstPrompt(child)).toEqual(['child task'])
    await run.dispose()
  })

  test('fork seeds the child with the parent completed turns and excludes the in-flight turn', async () => {
    let parentCalls = 0
    const parentModel = new MockLanguageModelV4({
      doStream: (options) => {
        parentCalls += 1
        return Promise.resolve(
          parentCalls === 1 ? textStream('first answer') : hangingStream(options),
        )
      },
    })
    const child = new MockLanguageModelV4({ doStream: [textStream('forked done')] })
    const { runtime, fork } = setup({ parent: parentModel, child })
    const parent = await runtime.createAgent({ cwd, options: { model: 'parent' } })
    await parent.runTurn([{ type: 'text', text: 'first question' }]).outcome
    const inFlight = parent.runTurn([{ type: 'text', text: 'in-flight question' }])
    await sleep(10)

    const run = await fork.start(request(parent))
    await run.result
    expect(firstPrompt(child)).toEqual(['first question', 'first answer', 'child task'])
    const childEvents =
      run.localAgent === undefined ? [] : (run.localAgent as LocalAgent).session.events()
    expect(childEvents.slice(0, 4).map((event) => event.type)).toEqual([
      'turn/start',
      'message',
      'message',
      'turn/end',
    ])
    expect(JSON.stringify(childEvents)).not.toContain('in-flight question')

    await run.dispose()
    inFlight.abort()
    await inFlight.outcome
  })

  test('fork of a parent this runtime does not hold rejects and publishes nothing', async () => {
    const { runtime, fork } = setup({})
    const stranger = { session: { id: 'elsewhere', header: { id: 'elsewhere', cwd } }, options: {} }
    await expect(fork.start({ ...request(stranger as LocalAgent) })).rejects.toMatchObject({
      code: 'PARENT_SESSION_UNKNOWN',
    })
    expect(runtime.sessionIds()).toEqual([])
  })

  test('a child deeper than maxDepth is rejected at start and nothing is published', async () => {
    const { runtime, spawn } = setup({
      child: new MockLanguageModelV4({ doStream: [textStream('x')] }),
    })
    const parent = await runtime.createAgent({ cwd, delegationDepth: 2 })
    await expect(spawn.start(request(parent, { maxDepth: 2 }))).rejects.toMatchObject({
      code: 'DEPTH_EXCEEDED',
    })
    expect(runtime.sessionIds()).toEqual([parent.session.id])
  })

  test('a cancelled child reaches quiescence: dispose resolves and the model is not called again', async () => {
    const child = new MockLanguageModelV4({
      doStream: (options) => Promise.resolve(hangingStream(options)),
    })
    const { runtime, spawn } = setup({ child })
    const parent = await runtime.createAgent({ cwd })
    const run = await spawn.start(request(parent))
    await sleep(20)
    await run.dispose()
    expect((await run.result).stopReason).toBe('aborted')
    const callsAtDispose = child.doStreamCalls.length
    await sleep(50)
    expect(child.doStreamCalls.length).toBe(callsAtDispose)
    expect(runtime.getAgent(run.id)).toBeUndefined()
    expect(run.localAgent === undefined ? false : (run.localAgent as LocalAgent).disposed).toBe(
      true,
    )
  })

  test('dispose is idempotent', async () => {
    const child = new MockLanguageModelV4({
      doStream: (options) => Promise.resolve(hangingStream(options)),
    })
    const { runtime, spawn } = setup({ child })
    const parent = await runtime.createAgent({ cwd })
    const run = await spawn.start(request(parent))
    await Promise.all([run.dispose(), run.dispose()])
    await run.dispose()
    expect((await run.result).stopReason).toBe('aborted')
  })

  test('the request signal aborting after readiness cancels the child with stop reason aborted', async () => {
    const child = new MockLanguageModelV4({
      doStream: (options) => Promise.resolve(hangingStream(options)),
    })
    const { runtime, spawn } = setup({ child })
    const parent = await runtime.createAgent({ cwd })
    const controller = new AbortController()
    const run = await spawn.start(request(parent, { signal: controller.signal }))
    await sleep(10)
    controller.abort()
    expect((await run.result).stopReason).toBe('aborted')
    await run.dispose()
  })

  test('the request signal aborting before readiness rejects start after unpublishing the child', async () => {
    const child = new MockLanguageModelV4({ doStream: [textStream('never')] })
    const controller = new AbortController()
    let publishedDuringSetup: readonly string[] = []
    const { runtime, spawn } = setup(
      { child },
      {
        tools: (scope) => {
          // The parent is created first; abort only while the child is being set up.
          if (scope.sessionId !== runtime.sessionIds()[0]) {
            publishedDuringSetup = runtime.sessionIds()
            controller.abort()
          }
          return {}
        },
      },
    )
    const parent = await runtime.createAgent({ cwd })
    await expect(spawn.start(request(parent, { signal: controller.signal }))).rejects.toMatchObject(
      { code: 'START_ABORTED' },
    )
    expect(publishedDuringSetup).toHaveLength(2)
    expect(runtime.sessionIds()).toEqual([parent.session.id])
    expect(child.doStreamCalls).toHaveLength(0)
  })

  test('an already-aborted request signal rejects start without creating a child', async () => {
    const { runtime, spawn } = setup({
      child: new MockLanguageModelV4({ doStream: [textStream('never')] }),
    })
    const parent = await runtime.createAgent({ cwd })
    await expect(
      spawn.start(request(parent, { signal: AbortSignal.abort() })),
    ).rejects.toMatchObject({ code: 'START_ABORTED' })
    expect(runtime.sessionIds()).toEqual([parent.session.id])
  })

  test('a child model failure resolves result with stop reason error instead of rejecting', async () => {
    const child = new MockLanguageModelV4({
      doStream: () => {
        throw new Error('upstream exploded')
      },
    })
    const { runtime, spawn } = setup({ child }, { maxRetries: 0 })
    const parent = await runtime.createAgent({ cwd })
    const run = await spawn.start(request(parent))
    const result = await run.result
    expect(result.stopReason).toBe('error')
    expect(result.failureCategory).toBe('model_error')
    await run.dispose()
  })

  const schema = {
    type: 'object',
    properties: { answer: { type: 'string' } },
    required: ['answer'],
    additionalProperties: false,
  } as const

  test('structured appears when the forced capture tool was called with a value satisfying the schema', async () => {
    const child = new MockLanguageModelV4({
      doStream: [toolCallStream('submit_result', { answer: '42' })],
    })
    const { runtime, spawn } = setup({ child })
    const parent = await runtime.createAgent({ cwd })
    const run = await spawn.start(request(parent, { outputSchema: schema }))
    const result = await run.result
    expect(result).toMatchObject({ stopReason: 'completed', structured: { answer: '42' } })
    expect(child.doStreamCalls[0]?.toolChoice).toEqual({ type: 'required' })
    expect(child.doStreamCalls[0]?.tools?.map((t) => t.name)).toContain('submit_result')
    await run.dispose()
  })

  test('structured is absent and the stop reason is error when the capture never satisfied the schema', async () => {
    const child = new MockLanguageModelV4({
      doStream: [toolCallStream('submit_result', { answer: 42 }, 'c1'), textStream('I give up')],
    })
    const { runtime, spawn } = setup({ child })
    const parent = await runtime.createAgent({ cwd })
    const run = await spawn.start(request(parent, { outputSchema: schema }))
    const result = await run.result
    expect(result.stopReason).toBe('error')
    expect(result.failureCategory).toBe('structured_output_missing')
    expect('structured' in result).toBe(false)
    // The rejected submission went back to the model with the reason, so it could retry.
    expect(JSON.stringify(child.doStreamCalls[1]?.prompt)).toContain('"accepted":false')
    await run.dispose()
  })

  test('an unsupported output schema is rejected at start', async () => {
    const { runtime, spawn } = setup({
      child: new MockLanguageModelV4({ doStream: [textStream('x')] }),
    })
    const parent = await runtime.createAgent({ cwd })
    await expect(
      spawn.start(request(parent, { outputSchema: { type: 'string' } })),
    ).rejects.toMatchObject({ code: 'UNSUPPORTED_SCHEMA' })
    expect(runtime.sessionIds()).toEqual([parent.session.id])
  })

  test('toolFilter removes the tool from the child prompt and from execution', async () => {
    let betaRan = false
    const tools = (): ToolSet => ({
      alpha: tool({ inputSchema: jsonSchema({ type: 'object' }), execute: () => 'alpha ran' }),
      beta: tool({
        inputSchema: jsonSchema({ type: 'object' }),
        execute: () => {
          betaRan = true
          return 'beta ran'
        },
      }),
    })
    const child = new MockLanguageModelV4({
      doStream: [toolCallStream('beta', {}), textStream('done')],
    })
    const { runtime, spawn } = setup({ child }, { tools })
    const parent = await runtime.createAgent({ cwd })
    const run = await spawn.start(request(parent, { toolFilter: { deny: ['beta'] } }))
    await run.result
    expect(child.doStreamCalls[0]?.tools?.map((t) => t.name)).toEqual(['alpha'])
    expect(betaRan).toBe(false)
    expect((run.localAgent as LocalAgent).toolNames).toEqual(['alpha'])
    await run.dispose()
  })

  test('a toolFilter naming an unknown tool rejects start and unpublishes the child', async () => {
    const { runtime, spawn } = setup(
      { child: new MockLanguageModelV4({ doStream: [textStream('x')] }) },
      { tools: () => ({}) },
    )
    const parent = await runtime.createAgent({ cwd })
    await expect(
      spawn.start(request(parent, { toolFilter: { deny: ['nope'] } })),
    ).rejects.toMatchObject({ code: 'UNKNOWN_TOOL' })
    expect(runtime.sessionIds()).toEqual([parent.session.id])
  })

  test('the persona becomes the child system prompt section, shadowing the deployment persona', async () => {
    const child = new MockLanguageModelV4({ doStream: [textStream('ok')] })
    const { runtime, spawn } = setup(
      { child },
      { system: 'Deployment rules.', persona: 'You are the default persona.' },
    )
    const parent = await runtime.createAgent({ cwd })
    const run = await spawn.start(
      request(parent, { persona: 'You are a reviewer working in {{cwd}}.' }),
    )
    await run.result
    expect(child.doStreamCalls[0]?.prompt[0]).toEqual({
      role: 'system',
      content: `Deployment rules.\n\nYou are a reviewer working in ${cwd}.`,
    })
    await run.dispose()
  })

  test('sendMessage steers the running child between steps', async () => {
    const release = deferred()
    const child = new MockLanguageModelV4({
      doStream: async () => {
        if (child.doStreamCalls.length === 1) {
          await release.promise
          return toolCallStream('list', { path: '.' })
        }
        return textStream('steered')
      },
    })
    const { runtime, spawn } = setup({ child })
    const parent = await runtime.createAgent({ cwd })
    const run = await spawn.start(request(parent))
    await sleep(10)
    run.sendMessage?.([{ type: 'text', text: 'also check the README' }])
    release.resolve()
    expect((await run.result).stopReason).toBe('completed')
    const second = child.doStreamCalls[1]
    expect(second === undefined ? [] : promptTexts(second)).toContain('also check the README')
    expect(() => run.sendMessage?.([{ type: 'text', text: 'too late' }])).toThrow(/resume instead/)
    await run.dispose()
  })

  test('resume sends a follow-up to the settled child as a fresh run that continues its session at the same depth', async () => {
    const child = new MockLanguageModelV4({
      doStream: [textStream('first result'), textStream('follow-up result')],
    })
    const { runtime, spawn } = setup({ child })
    const parent = await runtime.createAgent({ cwd, delegationDepth: 1 })
    const run = await spawn.start(request(parent))
    await run.result
    const resumed = await run.resume?.([{ type: 'text', text: 'now the follow-up' }])
    expect(resumed).toBeDefined()
    if (resumed === undefined) return
    expect(resumed).not.toBe(run)
    expect(resumed.id).toBe(run.id)
    expect(resumed.localAgent).toBe(run.localAgent)
    expect(await resumed.result).toMatchObject({
      stopReason: 'completed',
      output: [{ type: 'text', text: 'follow-up result' }],
    })
    expect(resumed.localAgent?.session.header.delegationDepth).toBe(2)
    const second = child.doStreamCalls[1]
    expect(second === undefined ? [] : promptTexts(second)).toEqual([
      'child task',
      'first result',
      'now the follow-up',
    ])
    // The child lives until the last run holding it is disposed.
    await run.dispose()
    expect(runtime.getAgent(run.id)).toBeDefined()
    await resumed.dispose()
    expect(runtime.getAgent(run.id)).toBeUndefined()
  })

  test('resume is refused while the child is still running', async () => {
    const child = new MockLanguageModelV4({
      doStream: (options) => Promise.resolve(hangingStream(options)),
    })
    const { runtime, spawn } = setup({ child })
    const parent = await runtime.createAgent({ cwd })
    const run = await spawn.start(request(parent))
    await expect(run.resume?.([{ type: 'text', text: 'x' }])).rejects.toMatchObject({
      code: 'AGENT_BUSY',
    })
    await run.dispose()
  })

  test('a scripted: model id runs a child end to end through the workspace tools without a model API', async () => {
    const scripts = createScriptRegistry({
      'list-then-answer': {
        steps: [
          { kind: 'tool-calls', calls: [{ toolName: 'list', input: { path: '.' } }] },
          { kind: 'text', text: 'Listed the workspace.' },
        ],
      },
    })
    const runtime = createAgentRuntime({
      resolveModel: (id) => resolveModel(id, { scripts }),
      defaultModel: 'scripted:list-then-answer',
    })
    const parent = await runtime.createAgent({ cwd })
    const run = await createSpawnProvider({ runtime }).start({
      prompt: [{ type: 'text', text: 'look' }],
      parent,
      signal: new AbortController().signal,
    })
    expect(await run.result).toEqual({
      output: [{ type: 'text', text: 'Listed the workspace.' }],
      stopReason: 'completed',
      // The tokens the child's model calls spent: what its terminal commit stores.
      usage: {
        inputTokens: expect.any(Number) as unknown,
        outputTokens: expect.any(Number) as unknown,
      },
    })
    const events = (run.localAgent as LocalAgent).session.events()
    expect(
      events.filter((event) => event.type === 'message').map((event) => event.message.role),
    ).toEqual(['user', 'assistant', 'tool', 'assistant'])
    await run.dispose()
  })
})

describe('spawn with a resumed history', () => {
  const text = (value: string) => [{ type: 'text' as const, text: value }]

  /** A first child's log as the worker would persist and load it: plain JSON. */
  async function persistedHistory(): Promise<SessionEvent[]> {
    const first = createScriptedModel({ steps: [{ kind: 'text', text: 'first answer' }] })
    const { runtime, spawn } = setup({ child: first })
    const parent = await runtime.createAgent({ cwd })
    const run = await spawn.start(request(parent, { prompt: text('first question') }))
    await run.result
    const log = run.history?.() ?? []
    await run.dispose()
    return JSON.parse(JSON.stringify(log)) as SessionEvent[]
  }

  test('the child model sees the resumed conversation before the new prompt, and the log gains one new turn after it', async () => {
    const history = await persistedHistory()
    const recall = createScriptedModel({ steps: [{ kind: 'recall' }] })
    const { runtime, spawn } = setup({ child: recall })
    const parent = await runtime.createAgent({ cwd })
    const run = await spawn.start(request(parent, { history, prompt: text('second question') }))
    expect(await run.result).toEqual({
      output: text('first question\nsecond question'),
      stopReason: 'completed',
      // The tokens the child's model calls spent: what its terminal commit stores.
      usage: {
        inputTokens: expect.any(Number) as unknown,
        outputTokens: expect.any(Number) as unknown,
      },
    })
    expect(JSON.stringify(recall.calls[0]?.prompt)).toContain('first answer')

    const log = run.history?.() ?? []
    expect(log.slice(0, history.length)).toEqual(history)
    const added = log.slice(history.length)
    expect(added.map((event) => [event.seq, event.type])).toEqual([
      [4, 'turn/start'],
      [5, 'message'],
      [6, 'message'],
      [7, 'turn/end'],
    ])
    expect(historySuffix(history, log)).toEqual({ ok: true, suffix: added })
    await run.dispose()
  })

  const turn = (turnId: string, from: number): SessionEvent[] => [
    { seq: from, type: 'turn/start', turnId },
    {
      seq: from + 1,
      type: 'message',
      turnId,
      message: { role: 'user', content: 'q' },
      steering: false,
    },
    { seq: from + 2, type: 'turn/end', turnId, stopReason: 'completed' },
  ]

  const invalidHistories: [string, readonly SubagentHistoryEvent[], RegExp][] = [
    ['a gap in seq', [...turn('t1', 0), ...turn('t2', 4)], /seq 4; a seed must be contiguous/],
    ['an unclosed turn', turn('t1', 0).slice(0, 2), /turn t1 is not finished/],
    [
      'a malformed message',
      [
        { seq: 0, type: 'turn/start', turnId: 't1' },
        { seq: 1, type: 'message', turnId: 't1', message: { role: 'robot' }, steering: false },
        { seq: 2, type: 'turn/end', turnId: 't1', stopReason: 'completed' },
      ],
      /event 1 is malformed \(message/,
    ],
  ]

  test.each(invalidHistories)(
    'a history with %s rejects start with INVALID_HISTORY and publishes nothing',
    async (_, history, reason) => {
      const recall = createScriptedModel({ steps: [{ kind: 'recall' }] })
      const { runtime, spawn } = setup({ child: recall })
      const parent = await runtime.createAgent({ cwd })
      const start = spawn.start(request(parent, { history }))
      await expect(start).rejects.toMatchObject({
        code: 'INVALID_HISTORY',
        message: expect.stringMatching(reason),
      })
      expect(runtime.sessionIds()).toEqual([parent.session.id])
      expect(recall.calls).toHaveLength(0)
    },
  )

  test('fork refuses a history even when called without the service', async () => {
    const { runtime, fork } = setup({ child: createScriptedModel({ steps: [] }) })
    const parent = await runtime.createAgent({ cwd })
    await expect(fork.start(request(parent, { history: turn('t1', 0) }))).rejects.toMatchObject({
      code: 'UNSUPPORTED_CAPABILITY',
    })
    expect(runtime.sessionIds()).toEqual([parent.session.id])
  })
})
