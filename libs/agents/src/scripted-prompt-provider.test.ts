import { describe, expect, it } from 'vitest'
import type { SubagentStartRequest } from '@baton/subagents'
import { createScriptedPromptProvider, parseScript } from './scripted-prompt-provider.ts'

function request(
  text: string,
  signal: AbortSignal = new AbortController().signal,
): SubagentStartRequest {
  return {
    prompt: [{ type: 'text', text }],
    parent: { session: { id: 'parent', header: { id: 'parent', cwd: '/tmp' } }, options: {} },
    signal,
  }
}

describe('scripted prompt provider', () => {
  it('echoes a prompt that is not a script', async () => {
    expect(parseScript([{ type: 'text', text: '{not json' }])).toEqual({ output: '{not json' })
    const run = await createScriptedPromptProvider().start(request('hello'))
    expect(await run.result).toEqual({
      output: [{ type: 'text', text: 'hello' }],
      stopReason: 'completed',
    })
    await run.dispose()
  })

  it('dispose stops a script that is still running (its result ends aborted)', async () => {
    const run = await createScriptedPromptProvider().start(request('{"hang":true}'))
    await run.dispose()
    expect(await run.result).toMatchObject({ stopReason: 'aborted', output: [] })
  })

  it('a failing script ends error with a safe category, never its message', async () => {
    const run = await createScriptedPromptProvider().start(request('{"fail":"secret token abc"}'))
    const result = await run.result
    expect(result).toMatchObject({
      stopReason: 'error',
      failureCategory: 'child_failed',
      output: [],
    })
    expect(JSON.stringify(result)).not.toContain('secret')
    await run.dispose()
  })

  it('reserves an outputBytes output in the host budget before it builds it, and builds none that does not fit', async () => {
    const reserved: number[] = []
    const budget = (fits: boolean) => ({
      reserve: (bytes: number) => (reserved.push(bytes), fits),
    })
    const fits = await createScriptedPromptProvider().start({
      ...request('{"outputBytes":5,"output":"é"}'),
      outputBudget: budget(true),
    })
    const built = await fits.result
    expect(built).toMatchObject({ stopReason: 'completed', output: [{ text: 'ééééé' }] })
    await fits.dispose()
    const refused = await createScriptedPromptProvider().start({
      ...request('{"outputBytes":16777216}'),
      outputBudget: budget(false),
    })
    expect(await refused.result).toEqual({
      output: [],
      stopReason: 'error',
      failureCategory: 'output_budget_exceeded',
    })
    await refused.dispose()
    // Exactly the UTF-8 size of what is (or would have been) built.
    expect(reserved).toEqual([Buffer.byteLength('ééééé'), 16777216])
  })

  it('outputBytes produces exactly that many bytes', async () => {
    const run = await createScriptedPromptProvider().start(request('{"outputBytes":10000}'))
    const result = await run.result
    expect(result.output[0]?.text.length).toBe(10000)
    await run.dispose()
  })

  it('a hanging child ends aborted when its signal fires', async () => {
    const controller = new AbortController()
    const run = await createScriptedPromptProvider().start(
      request('{"hang":true}', controller.signal),
    )
    setTimeout(() => controller.abort(), 20)
    expect(await run.result).toMatchObject({ stopReason: 'aborted' })
    await run.dispose()
  })

  it('with ignoreCancelMs a hanging child ends aborted only that long after its signal fired', async () => {
    const controller = new AbortController()
    const run = await createScriptedPromptProvider().start(
      request('{"hang":true,"ignoreCancelMs":300}', controller.signal),
    )
    controller.abort()
    const abortedAt = performance.now()
    expect(await run.result).toMatchObject({ stopReason: 'aborted' })
    expect(performance.now() - abortedAt).toBeGreaterThanOrEqual(290)
    await run.dispose()
  })

  it('awaitSteering answers with the steering messages, in the order sent', async () => {
    const run = await createScriptedPromptProvider().start(request('{"awaitSteering":2}'))
    expect(typeof run.sendMessage).toBe('function')
    run.sendMessage?.([{ type: 'text', text: 'first' }])
    setTimeout(() => run.sendMessage?.([{ type: 'text', text: 'second' }]), 10)
    expect(await run.result).toEqual({
      output: [{ type: 'text', text: 'first\nsecond' }],
      stopReason: 'completed',
    })
    await run.dispose()
  })
})
