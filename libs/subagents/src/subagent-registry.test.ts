import { describe, expect, it } from 'vitest'
import { createAgentContext, type AgentContext } from './agent-context.ts'
import { createSubagentCapabilityInheritancePolicy } from './capability-inheritance-policy.ts'
import type {
  SubagentExecutionHook,
  SubagentExecutionMetadata,
  SubagentExecutionOutcome,
} from './execution-hook.ts'
import { asSubagentLifecycleEvent } from './subagent-lifecycle.ts'
import {
  createSubagentRegistry,
  readSubagentStack,
  type SubagentConfig,
} from './subagent-registry.ts'
import type { SubagentTask } from './subagent-task.ts'
import { createSubagentToolInheritancePolicy } from './tool-inheritance-policy.ts'

/** A child that answers with fixed text and records what it was given. */
function textChild(name: string, text: string, extra: Partial<SubagentConfig> = {}) {
  const calls: { task: SubagentTask; context: AgentContext }[] = []
  const config: SubagentConfig = {
    name,
    run: (task, context) => {
      calls.push({ task, context })
      return Promise.resolve({
        output: text,
        usage: { requests: 1, inputTokens: 2, outputTokens: 3 },
        runId: `${name}-run`,
      })
    },
    ...extra,
  }
  return { config, calls }
}

async function rejection(promise: Promise<unknown>): Promise<{ code?: string; message: string }> {
  try {
    await promise
  } catch (error) {
    return error as { code?: string; message: string }
  }
  throw new Error('expected the delegation to reject')
}

describe('createSubagentRegistry', () => {
  it('delegates a prompt to the named subagent and returns the envelope with a generated task id', async () => {
    const research = textChild('research', 'child')
    const registry = createSubagentRegistry([research.config])
    const delegated = await registry.delegate('research', 'collect facts', createAgentContext())
    expect(delegated).toMatchObject({
      name: 'research',
      output: 'child',
      task: { prompt: 'collect facts' },
    })
    expect(delegated.task.id).toMatch(/^task_/)
    expect(research.calls[0]?.task).toBe(delegated.task)
  })

  it('keeps the caller’s task id and metadata in the delegation envelope', async () => {
    const registry = createSubagentRegistry([textChild('research', 'child').config])
    const delegated = await registry.delegateTask(
      'research',
      { id: 'research-1', prompt: 'p', metadata: { source: 'docs' } },
      createAgentContext(),
    )
    expect(delegated).toEqual({
      name: 'research',
      task: { id: 'research-1', prompt: 'p', metadata: { source: 'docs' } },
      output: 'child',
      usage: { requests: 1, inputTokens: 2, outputTokens: 3 },
      runId: 'research-run',
    })
  })

  it('rejects an unknown subagent name with UNKNOWN_SUBAGENT', async () => {
    const registry = createSubagentRegistry([textChild('research', 'child').config])
    expect((await rejection(registry.delegate('writer', 'p', createAgentContext()))).code).toBe(
      'UNKNOWN_SUBAGENT',
    )
  })

  it('rejects a second subagent with the same name', () => {
    const registry = createSubagentRegistry([textChild('research', 'a').config])
    expect(() => registry.register(textChild('research', 'b').config)).toThrow(
      expect.objectContaining({ code: 'DUPLICATE_SUBAGENT' }),
    )
  })

  it('shares usage and dependencies with the child context but copies metadata', async () => {
    let childContext: AgentContext | undefined
    const registry = createSubagentRegistry([
      {
        name: 'research',
        run: (_task, context) => {
          childContext = context
          context.usage.add({ requests: 1, outputTokens: 5 })
          context.metadata.set('child.only', true)
          return Promise.resolve({ output: 'ok' })
        },
      },
    ])
    const parent = createAgentContext({
      metadata: [['tenant', 't1']],
      dependencies: new Map([['db', 'handle']]),
    })
    await registry.delegate('research', 'p', parent)
    expect(childContext?.dependencies).toBe(parent.dependencies)
    expect(parent.usage.snapshot()).toEqual({ requests: 1, inputTokens: 0, outputTokens: 5 })
    expect(childContext?.metadata.get('tenant')).toBe('t1')
    expect(parent.metadata.has('child.only')).toBe(false)
    expect(childContext?.lifecycle).not.toBe(parent.lifecycle)
  })

  it('publishes subagent_started then subagent_completed on the parent lifecycle log with task id, name and metadata', async () => {
    const registry = createSubagentRegistry([textChild('research', 'child').config])
    const parent = createAgentContext()
    await registry.delegateTask(
      'research',
      { id: 'research-1', prompt: 'p', metadata: { source: 'docs' } },
      parent,
    )
    const records = parent.lifecycle.records()
    expect(records.map((record) => record.kind)).toEqual(['subagent_started', 'subagent_completed'])
    expect(asSubagentLifecycleEvent(records[0]!)).toEqual({
      kind: 'started',
      taskId: 'research-1',
      name: 'research',
      metadata: { source: 'docs' },
    })
    expect(asSubagentLifecycleEvent(records[1]!)).toMatchObject({
      kind: 'completed',
      taskId: 'research-1',
      output: 'child',
      runId: 'research-run',
    })
  })

  it('publishes subagent_failed with error_kind and message and rethrows when the child run fails', async () => {
    const failure = new Error('model exploded')
    const registry = createSubagentRegistry([
      { name: 'research', run: () => Promise.reject(failure) },
    ])
    const parent = createAgentContext()
    await expect(
      registry.delegateTask(
        'research',
        { id: 't1', prompt: 'p', metadata: { source: 'docs' } },
        parent,
      ),
    ).rejects.toBe(failure)
    const records = parent.lifecycle.records()
    expect(records.map((record) => record.kind)).toEqual(['subagent_started', 'subagent_failed'])
    expect(records[1]?.payload).toEqual({
      kind: 'failed',
      taskId: 't1',
      name: 'research',
      metadata: { source: 'docs', error_kind: 'run_failed', message: 'model exploded' },
    })
  })

  it('runs beforeSubagentRun with typed metadata and lets it mutate the child context before the run', async () => {
    const seen: SubagentExecutionMetadata[] = []
    const hook: SubagentExecutionHook = {
      beforeSubagentRun(metadata, child) {
        seen.push(metadata)
        child.metadata.set('subagent.audit_name', metadata.name)
      },
    }
    const research = textChild('research', 'child', { hooks: [hook] })
    const registry = createSubagentRegistry([research.config])
    await registry.delegateTask('research', { id: 't1', prompt: 'p' }, createAgentContext())
    expect(seen).toEqual([{ name: 'research', taskId: 't1', prompt: 'p', depth: 1 }])
    expect(research.calls[0]?.context.metadata.get('subagent.audit_name')).toBe('research')
  })

  it('refuses the run when a beforeSubagentRun hook throws', async () => {
    const research = textChild('research', 'child', {
      hooks: [
        {
          beforeSubagentRun: () => {
            throw new Error('policy says no')
          },
        },
      ],
    })
    const parent = createAgentContext()
    await expect(
      createSubagentRegistry([research.config]).delegate('research', 'p', parent),
    ).rejects.toThrow('policy says no')
    expect(research.calls).toHaveLength(0)
    expect(parent.lifecycle.records().at(-1)?.kind).toBe('subagent_failed')
  })

  it('reports the completed or failed outcome to afterSubagentRun', async () => {
    const outcomes: SubagentExecutionOutcome[] = []
    const hooks = [
      {
        afterSubagentRun: (
          _m: SubagentExecutionMetadata,
          _c: AgentContext,
          outcome: SubagentExecutionOutcome,
        ) => void outcomes.push(outcome),
      },
    ]
    const failure = new Error('boom')
    const registry = createSubagentRegistry([
      textChild('ok', 'fine', { hooks }).config,
      { name: 'bad', run: () => Promise.reject(failure), hooks },
    ])
    await registry.delegate('ok', 'p', createAgentContext())
    await registry.delegate('bad', 'p', createAgentContext()).catch(() => undefined)
    expect(outcomes).toEqual([
      {
        status: 'completed',
        output: 'fine',
        usage: { requests: 1, inputTokens: 2, outputTokens: 3 },
        runId: 'ok-run',
      },
      { status: 'failed', error: failure },
    ])
  })

  it('refuses nested delegation by default through the subagent stack in context metadata', async () => {
    let nested: unknown
    const registry = createSubagentRegistry()
    registry.register(textChild('leaf', 'leaf').config)
    registry.register({
      name: 'outer',
      run: async (_task, child) => {
        expect(readSubagentStack(child).map((frame) => frame.name)).toEqual(['outer'])
        nested = await rejection(registry.delegate('leaf', 'p', child))
        return { output: 'outer' }
      },
    })
    await registry.delegate('outer', 'p', createAgentContext())
    expect(nested).toMatchObject({ code: 'NESTED_DELEGATION_DENIED' })
  })

  it('allows nested delegation when the delegating subagent opts in with nestedDelegation: true', async () => {
    const registry = createSubagentRegistry()
    const leaf = textChild('leaf', 'leaf output')
    registry.register(leaf.config)
    registry.register({
      name: 'outer',
      nestedDelegation: true,
      run: async (_task, child) => ({
        output: (await registry.delegate('leaf', 'p', child)).output,
      }),
    })
    expect((await registry.delegate('outer', 'p', createAgentContext())).output).toBe('leaf output')
    expect(readSubagentStack(leaf.calls[0]!.context).map((frame) => frame.name)).toEqual([
      'outer',
      'leaf',
    ])
  })

  it('publishes subagent_failed with error_kind, tool_name and message when a required tool is missing or denied', async () => {
    const missing = textChild('missing', 'x', {
      toolPolicy: createSubagentToolInheritancePolicy({ required: ['grep'] }),
    })
    const denied = textChild('denied', 'x', {
      toolPolicy: createSubagentToolInheritancePolicy({ required: ['ask_user_question'] }),
    })
    const registry = createSubagentRegistry([missing.config, denied.config])
    const parent = createAgentContext({ tools: [{ name: 'view' }, { name: 'ask_user_question' }] })

    expect((await rejection(registry.delegate('missing', 'p', parent))).code).toBe(
      'MISSING_REQUIRED_TOOL',
    )
    expect((await rejection(registry.delegate('denied', 'p', parent))).code).toBe(
      'DENIED_REQUIRED_TOOL',
    )
    expect(missing.calls.length + denied.calls.length).toBe(0)
    const failures = parent.lifecycle
      .records()
      .map((record) => (record.payload as { metadata: Record<string, unknown> }).metadata)
    expect(failures).toEqual([
      {
        error_kind: 'missing_required_tool',
        tool_name: 'grep',
        message: expect.stringContaining('"grep"') as string,
      },
      {
        error_kind: 'denied_required_tool',
        tool_name: 'ask_user_question',
        message: expect.stringContaining('main-agent-only') as string,
      },
    ])
  })

  it('hands the child only the tools, hooks and bundles its inheritance policies allow', async () => {
    const research = textChild('research', 'x', {
      toolPolicy: createSubagentToolInheritancePolicy({ required: ['grep'] }),
      capabilityPolicy: createSubagentCapabilityInheritancePolicy({
        hooks: true,
        deniedCapabilities: ['approval'],
      }),
    })
    const parent = createAgentContext({
      tools: [
        { name: 'grep' },
        { name: 'bash' },
        { name: 'todo', metadata: { auto_inherit: true } },
      ],
      hooks: [{ capabilityId: 'audit' }, { capabilityId: 'approval' }],
      capabilityBundles: [{ capabilityId: 'b', name: 'bundle' }],
    })
    await createSubagentRegistry([research.config]).delegate('research', 'p', parent)
    const child = research.calls[0]!.context
    expect(child.tools.map((tool) => tool.name)).toEqual(['grep', 'todo'])
    expect(child.hooks).toEqual([{ capabilityId: 'audit' }])
    expect(child.capabilityBundles).toEqual([])
  })

  it('reports per child whether it is available, its inherited tools and diagnostics in subagentInfo', () => {
    const registry = createSubagentRegistry([
      textChild('grep-agent', 'x', {
        description: 'greps',
        toolPolicy: createSubagentToolInheritancePolicy({ required: ['grep'], optional: ['view'] }),
      }).config,
      textChild('shell-agent', 'x', {
        toolPolicy: createSubagentToolInheritancePolicy({ required: ['shell'] }),
      }).config,
    ])
    expect(registry.subagentInfo([{ name: 'grep' }])).toEqual([
      {
        name: 'grep-agent',
        description: 'greps',
        available: true,
        inherited_tools: ['grep'],
        diagnostics: [
          expect.objectContaining({ kind: 'missing_optional_tool', tool_name: 'view' }),
        ],
      },
      {
        name: 'shell-agent',
        available: false,
        inherited_tools: [],
        diagnostics: [
          expect.objectContaining({ kind: 'missing_required_tool', tool_name: 'shell' }),
        ],
      },
    ])
  })

  it('refuses delegation with DELEGATION_DISABLED when the registry mode is disabled', async () => {
    const research = textChild('research', 'x')
    const registry = createSubagentRegistry([research.config], { mode: 'disabled' })
    expect((await rejection(registry.delegate('research', 'p', createAgentContext()))).code).toBe(
      'DELEGATION_DISABLED',
    )
    expect(research.calls).toHaveLength(0)
  })
})
