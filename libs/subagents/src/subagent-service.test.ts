import { describe, expect, it, vi } from 'vitest'
import { isSubagentError } from './errors.ts'
import { createSubagentService, type SubagentServiceEvent } from './subagent-service.ts'
import type {
  Agent,
  SubagentCapabilities,
  SubagentProvider,
  SubagentResult,
  SubagentRun,
  SubagentStartRequest,
} from './types.ts'

const NO_CAPABILITIES: SubagentCapabilities = {
  outputSchema: false,
  depthLimit: false,
  toolFilter: false,
  persona: false,
  history: false,
}
const ALL_CAPABILITIES: SubagentCapabilities = {
  outputSchema: true,
  depthLimit: true,
  toolFilter: true,
  persona: true,
  history: true,
}

/** One completed turn, as a persisted child log would hold it. */
const HISTORY = [
  { seq: 0, type: 'turn/start', turnId: 't1' },
  { seq: 1, type: 'message', turnId: 't1', message: { role: 'user', content: 'q' } },
  { seq: 2, type: 'turn/end', turnId: 't1', stopReason: 'completed' },
] as const

function parentAgent(depth?: number): Agent {
  return {
    session: {
      id: 'parent-session',
      header: {
        id: 'parent-session',
        cwd: '/work',
        ...(depth === undefined ? {} : { delegationDepth: depth }),
      },
    },
    options: {},
  }
}

function request(overrides: Partial<SubagentStartRequest> = {}): SubagentStartRequest {
  return {
    prompt: [{ type: 'text', text: 'do it' }],
    parent: parentAgent(),
    signal: new AbortController().signal,
    ...overrides,
  }
}

function deferred<T>(): {
  promise: Promise<T>
  resolve: (value: T) => void
  reject: (error: unknown) => void
} {
  let resolve!: (value: T) => void
  let reject!: (error: unknown) => void
  const promise = new Promise<T>((res, rej) => {
    resolve = res
    reject = rej
  })
  return { promise, resolve, reject }
}

/** A tiny scripted provider: every start returns a run whose result the test settles by hand. */
function fakeProvider(name: string, capabilities: SubagentCapabilities = NO_CAPABILITIES) {
  const starts: SubagentStartRequest[] = []
  const results: ReturnType<typeof deferred<SubagentResult>>[] = []
  let failStartWith: Error | undefined
  const provider: SubagentProvider = {
    name,
    capabilities,
    inheritsParentContext: false,
    start(req) {
      starts.push(req)
      if (failStartWith !== undefined) return Promise.reject(failStartWith)
      const result = deferred<SubagentResult>()
      results.push(result)
      const run: SubagentRun = {
        id: `${name}-child-${starts.length}`,
        localAgent: undefined,
        result: result.promise,
        dispose: () => Promise.resolve(),
      }
      return Promise.resolve(run)
    },
  }
  return {
    provider,
    starts,
    results,
    failStart(error: Error) {
      failStartWith = error
    },
  }
}

const completed: SubagentResult = {
  output: [{ type: 'text', text: 'done' }],
  stopReason: 'completed',
}
const flush = () => new Promise((resolve) => setTimeout(resolve, 0))

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise
  } catch (error) {
    return error
  }
  throw new Error('expected the promise to reject')
}

describe('createSubagentService', () => {
  it.each([
    ['outputSchema', { outputSchema: { type: 'object' } }],
    ['depthLimit', { maxDepth: 3 }],
    ['toolFilter', { toolFilter: { deny: ['bash'] } }],
    ['persona', { persona: 'You are terse.' }],
    ['history', { history: HISTORY }],
  ] as const)(
    'rejects a request needing a capability the provider lacks before calling start (%s)',
    async (capability, fields) => {
      const service = createSubagentService()
      const fake = fakeProvider('spawn')
      service.registerProvider(fake.provider)
      const error = await rejection(service.start('spawn', request(fields)))
      expect(isSubagentError(error, 'UNSUPPORTED_CAPABILITY')).toBe(true)
      expect((error as { details: { missing: string[] } }).details.missing).toEqual([capability])
      expect(fake.starts).toHaveLength(0)
    },
  )

  it('passes a request whose capabilities the provider supports through to start unchanged', async () => {
    const service = createSubagentService()
    const fake = fakeProvider('spawn', ALL_CAPABILITIES)
    service.registerProvider(fake.provider)
    const req = request({
      outputSchema: { type: 'object' },
      maxDepth: 1,
      toolFilter: { deny: [] },
      persona: 'p',
      history: HISTORY,
    })
    await service.start('spawn', req)
    expect(fake.starts).toEqual([req])
  })

  it('rejects an unknown provider name with UNKNOWN_PROVIDER', async () => {
    const service = createSubagentService()
    expect(
      isSubagentError(await rejection(service.start('nope', request())), 'UNKNOWN_PROVIDER'),
    ).toBe(true)
  })

  it('keeps provider names unique while different providers coexist', async () => {
    const service = createSubagentService()
    const spawn = fakeProvider('spawn')
    const acp = fakeProvider('acp')
    service.registerProvider(spawn.provider)
    service.registerProvider(acp.provider)
    expect(() => service.registerProvider(fakeProvider('spawn').provider)).toThrow(
      expect.objectContaining({ code: 'DUPLICATE_PROVIDER' }),
    )
    await service.start('acp', request())
    await service.start('spawn', request())
    expect([spawn.starts.length, acp.starts.length]).toEqual([1, 1])
    expect(service.providerNames()).toEqual(['spawn', 'acp'])
  })

  it('blocks new starts after provider removal without revoking accepted runs', async () => {
    const service = createSubagentService()
    const fake = fakeProvider('spawn')
    service.registerProvider(fake.provider)
    const events: SubagentServiceEvent[] = []
    service.on((event) => events.push(event))
    const accepted = await service.start('spawn', request())

    service.removeProvider('spawn')
    expect(
      isSubagentError(await rejection(service.start('spawn', request())), 'PROVIDER_REMOVED'),
    ).toBe(true)
    expect(fake.starts).toHaveLength(1)

    fake.results[0]?.resolve(completed)
    await expect(accepted.result).resolves.toBe(completed)
    await flush()
    expect(events.map((event) => event.type)).toEqual(['subagent/start', 'subagent/end'])
  })

  it('unregisters only the registration the returned function created', async () => {
    const service = createSubagentService()
    const first = fakeProvider('spawn')
    const unregister = service.registerProvider(first.provider)
    unregister()
    const second = fakeProvider('spawn')
    service.registerProvider(second.provider)
    unregister()
    await service.start('spawn', request())
    expect(second.starts).toHaveLength(1)
  })

  it('rejects an unsupported output schema at start before calling the provider', async () => {
    const service = createSubagentService()
    const fake = fakeProvider('spawn', ALL_CAPABILITIES)
    service.registerProvider(fake.provider)
    const error = await rejection(
      service.start('spawn', request({ outputSchema: { type: 'object', oneOf: [] } })),
    )
    expect(isSubagentError(error, 'UNSUPPORTED_SCHEMA')).toBe(true)
    expect(fake.starts).toHaveLength(0)
  })

  it('rejects a child depth above maxDepth before calling start', async () => {
    const service = createSubagentService()
    const fake = fakeProvider('spawn', ALL_CAPABILITIES)
    service.registerProvider(fake.provider)
    const error = await rejection(
      service.start('spawn', request({ parent: parentAgent(2), maxDepth: 2 })),
    )
    expect(isSubagentError(error, 'DEPTH_EXCEEDED')).toBe(true)
    await service.start('spawn', request({ parent: parentAgent(1), maxDepth: 2 }))
    expect(fake.starts).toHaveLength(1)
  })

  it('rejects a maxDepth that is not a non-negative safe integer', async () => {
    const service = createSubagentService()
    const fake = fakeProvider('spawn', ALL_CAPABILITIES)
    service.registerProvider(fake.provider)
    for (const maxDepth of [-1, 1.5, Number.NaN, 2 ** 53]) {
      expect(
        isSubagentError(
          await rejection(service.start('spawn', request({ maxDepth }))),
          'INVALID_DEPTH',
        ),
      ).toBe(true)
    }
    expect(fake.starts).toHaveLength(0)
  })

  it('rejects a start whose derived depth leaves the safe-integer domain even without maxDepth', async () => {
    const service = createSubagentService()
    const fake = fakeProvider('spawn')
    service.registerProvider(fake.provider)
    const error = await rejection(
      service.start('spawn', request({ parent: parentAgent(Number.MAX_SAFE_INTEGER) })),
    )
    expect(isSubagentError(error, 'INVALID_DEPTH')).toBe(true)
    expect(fake.starts).toHaveLength(0)
  })

  it('returns the same run object the provider returned', async () => {
    const service = createSubagentService()
    const fake = fakeProvider('spawn')
    let returned: SubagentRun | undefined
    service.registerProvider({
      ...fake.provider,
      start: async (req) => (returned = await fake.provider.start(req)),
    })
    const run = await service.start('spawn', request())
    expect(run).toBe(returned)
  })

  it('emits subagent/start after start fulfils and a paired subagent/end with the same identity and final output', async () => {
    const service = createSubagentService({ createRunId: () => 'run-1' })
    const fake = fakeProvider('spawn')
    service.registerProvider(fake.provider)
    const events: SubagentServiceEvent[] = []
    service.on((event) => events.push(event))

    const run = await service.start('spawn', request())
    expect(events).toHaveLength(1)
    const start = events[0]
    expect(start?.type).toBe('subagent/start')
    expect(start?.identity).toMatchObject({
      runId: 'run-1',
      providerName: 'spawn',
      sessionId: run.id,
      parentSessionId: 'parent-session',
    })

    fake.results[0]?.resolve(completed)
    await flush()
    expect(events).toHaveLength(2)
    const end = events[1]
    expect(end?.type === 'subagent/end' && end.identity).toBe(start?.identity)
    expect(end?.type === 'subagent/end' && end.end).toEqual({ kind: 'result', result: completed })
  })

  it('emits subagent/end carrying the infrastructure failure when the result rejects', async () => {
    const service = createSubagentService()
    const fake = fakeProvider('spawn')
    service.registerProvider(fake.provider)
    const events: SubagentServiceEvent[] = []
    service.on((event) => events.push(event))
    const run = await service.start('spawn', request())
    const fault = new Error('transport lost')
    fake.results[0]?.reject(fault)
    await expect(run.result).rejects.toBe(fault)
    await flush()
    expect(events[1]).toMatchObject({
      type: 'subagent/end',
      end: { kind: 'infrastructure-failure', error: fault },
    })
  })

  it('mints a unique run id for each accepted start', async () => {
    const service = createSubagentService()
    const fake = fakeProvider('spawn')
    service.registerProvider(fake.provider)
    const ids: string[] = []
    service.on((event) => {
      if (event.type === 'subagent/start') ids.push(event.identity.runId)
    })
    await Promise.all([
      service.start('spawn', request()),
      service.start('spawn', request()),
      service.start('spawn', request()),
    ])
    expect(new Set(ids).size).toBe(3)
  })

  it('contains listener exceptions so they never break the run', async () => {
    const contained: unknown[] = []
    const service = createSubagentService({ onListenerError: (error) => contained.push(error) })
    const fake = fakeProvider('spawn')
    service.registerProvider(fake.provider)
    const seen: string[] = []
    service.on(() => {
      throw new Error('listener bug')
    })
    service.on((event) => seen.push(event.type))

    const run = await service.start('spawn', request())
    fake.results[0]?.resolve(completed)
    await expect(run.result).resolves.toBe(completed)
    await flush()
    expect(seen).toEqual(['subagent/start', 'subagent/end'])
    expect(contained).toHaveLength(2)
  })

  it('emits no lifecycle pair when the provider rejects start', async () => {
    const service = createSubagentService()
    const fake = fakeProvider('spawn')
    fake.failStart(new Error('setup failed'))
    service.registerProvider(fake.provider)
    const listener = vi.fn()
    service.on(listener)
    await expect(service.start('spawn', request())).rejects.toThrow('setup failed')
    await flush()
    expect(listener).not.toHaveBeenCalled()
  })

  it('stops delivering events after a listener unsubscribes', async () => {
    const service = createSubagentService()
    service.registerProvider(fakeProvider('spawn').provider)
    const listener = vi.fn()
    const unsubscribe = service.on(listener)
    unsubscribe()
    await service.start('spawn', request())
    expect(listener).not.toHaveBeenCalled()
  })
})
