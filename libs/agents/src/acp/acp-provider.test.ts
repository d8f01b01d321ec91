import { mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, test } from 'vitest'
import type { Agent, SubagentRun, SubagentStartRequest } from '@baton/subagents'
import { FailureCategory } from '@baton/contracts'
import { ACP_FIXTURE_AGENT } from '@baton/testing/acp-agent'
import { AcpProviderError, AcpStartErrorCode, createAcpProvider } from './index.ts'
import type { AcpProviderOptions } from './index.ts'

// The agent under test is a real process speaking ACP over stdio: no mocks of the transport.

interface AcpFixtures {
  /** The parent session's cwd: a fresh directory per test. */
  workspace: string
  /** Starts fixture agents and, after the test, asserts that none of them is left running. */
  agents: AgentLauncher
}

interface AgentLauncher {
  /** Provider options that run the fixture agent and record its pid under a fresh label. */
  options(
    label: string,
    extra?: { flags?: string[]; provider?: Partial<AcpProviderOptions> },
  ): AcpProviderOptions
  /** The recorded pid of a labelled agent, waiting until the agent has written it. */
  pid(label: string): Promise<number>
  /** Whether a labelled agent ever wrote its pid (i.e. a process was spawned). */
  spawned(label: string): Promise<boolean>
  /** Runs are disposed after the test even when an assertion failed first. */
  track(run: SubagentRun): SubagentRun
}

const test_ = test.extend<AcpFixtures>({
  // eslint-disable-next-line no-empty-pattern
  workspace: async ({}, use) => {
    const dir = await mkdtemp(join(tmpdir(), 'baton-acp-ws-'))
    await use(dir)
    await rm(dir, { recursive: true, force: true })
  },
  // eslint-disable-next-line no-empty-pattern
  agents: async ({}, use) => {
    const scratch = await mkdtemp(join(tmpdir(), 'baton-acp-pids-'))
    const labels = new Set<string>()
    const runs: SubagentRun[] = []
    const pidPath = (label: string): string => join(scratch, `${label}.pid`)
    const readPid = async (label: string): Promise<number | undefined> => {
      try {
        return Number(await readFile(pidPath(label), 'utf8'))
      } catch {
        return undefined
      }
    }
    await use({
      options(label, extra = {}) {
        labels.add(label)
        return {
          command: process.execPath,
          args: [ACP_FIXTURE_AGENT, '--pid-file', pidPath(label), ...(extra.flags ?? [])],
          ...extra.provider,
        }
      },
      async pid(label) {
        for (let attempt = 0; attempt < 200; attempt += 1) {
          const pid = await readPid(label)
          if (pid !== undefined && pid > 0) return pid
          await sleep(25)
        }
        throw new Error(`fixture agent ${label} never wrote its pid`)
      },
      async spawned(label) {
        return (await readPid(label)) !== undefined
      },
      track(run) {
        runs.push(run)
        return run
      },
    })
    await Promise.all(runs.map((run) => run.dispose()))
    const leftRunning: string[] = []
    for (const label of labels) {
      const pid = await readPid(label)
      if (pid !== undefined && isAlive(pid)) leftRunning.push(`${label} (pid ${pid})`)
    }
    await rm(scratch, { recursive: true, force: true })
    expect(leftRunning, 'fixture agents left running').toEqual([])
  },
})

function parentAgent(cwd: string): Agent {
  return { session: { id: 'parent-1', header: { id: 'parent-1', cwd } }, options: {} }
}

function startRequest(
  cwd: string,
  text: string,
  signal = new AbortController().signal,
): SubagentStartRequest {
  return { prompt: [{ type: 'text', text }], parent: parentAgent(cwd), signal }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ESRCH') return false
    throw error
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms))
}

async function startFailure(promise: Promise<unknown>): Promise<AcpProviderError> {
  const error = await promise.then(
    () => undefined,
    (reason: unknown) => reason,
  )
  expect(error).toBeInstanceOf(AcpProviderError)
  return error as AcpProviderError
}

describe('createAcpProvider', () => {
  test('advertises only what an external ACP agent can honour', () => {
    const provider = createAcpProvider({ command: process.execPath })
    expect(provider.name).toBe('acp')
    expect(provider.inheritsParentContext).toBe(false)
    expect(provider.capabilities).toEqual({
      outputSchema: false,
      depthLimit: false,
      toolFilter: false,
      persona: false,
      history: false,
    })
    expect(createAcpProvider({ name: 'claude-acp', command: 'x' }).name).toBe('claude-acp')
  })

  test_(
    'a prompt completes with the streamed output as a remote, parent-scoped run',
    async ({ workspace, agents }) => {
      const provider = createAcpProvider(agents.options('echo'))
      const run = agents.track(await provider.start(startRequest(workspace, 'hello world')))

      expect(run.id).toMatch(/^acp:parent-1:[0-9a-f-]{36}$/)
      expect(run.localAgent).toBeUndefined()
      await expect(run.result).resolves.toEqual({
        output: [{ type: 'text', text: 'echo: hello world' }],
        stopReason: 'completed',
      })
    },
  )

  test_('the session cwd is the parent header cwd', async ({ workspace, agents }) => {
    const provider = createAcpProvider(agents.options('cwd'))
    const run = agents.track(await provider.start(startRequest(workspace, 'cwd')))

    expect((await run.result).output).toEqual([{ type: 'text', text: `cwd:${workspace}` }])
  })

  test_(
    'a deployment cwd override replaces the parent header cwd',
    async ({ workspace, agents }) => {
      const override = await mkdtemp(join(tmpdir(), 'baton-acp-override-'))
      try {
        const provider = createAcpProvider(
          agents.options('override', { provider: { cwd: override } }),
        )
        const run = agents.track(await provider.start(startRequest(workspace, 'cwd')))

        expect((await run.result).output).toEqual([{ type: 'text', text: `cwd:${override}` }])
      } finally {
        await rm(override, { recursive: true, force: true })
      }
    },
  )

  test_(
    'aborting the signal mid-prompt sends session/cancel and resolves aborted',
    async ({ workspace, agents }) => {
      const controller = new AbortController()
      const provider = createAcpProvider(agents.options('hang'))
      const run = agents.track(
        await provider.start(startRequest(workspace, 'hang', controller.signal)),
      )
      const pid = await agents.pid('hang')
      await sleep(100)

      controller.abort(new Error('parent tool call cancelled'))
      const result = await run.result

      expect(result.stopReason).toBe('aborted')
      expect(result.failureCategory).toBe(FailureCategory.Cancelled)
      // The agent itself saw the cancel (it streamed its acknowledgement), and cancel is not a kill.
      expect(result.output).toEqual([{ type: 'text', text: 'hanging cancelled-by-client' }])
      expect(isAlive(pid)).toBe(true)
    },
  )

  test_(
    'an agent that ignores session/cancel still ends the run aborted',
    async ({ workspace, agents }) => {
      const controller = new AbortController()
      const provider = createAcpProvider(agents.options('ignore-cancel'))
      const run = agents.track(
        await provider.start(startRequest(workspace, 'ignore-cancel', controller.signal)),
      )
      await sleep(100)

      controller.abort()
      const result = await run.result

      expect(result.stopReason).toBe('aborted')
      expect(result.output).toEqual([{ type: 'text', text: 'working done anyway' }])
    },
  )

  test_(
    'an agent that answers nothing once aborted is killed after the grace, and the run ends aborted',
    async ({ workspace, agents }) => {
      const controller = new AbortController()
      const provider = createAcpProvider(
        agents.options('deaf', {
          flags: ['--stubborn'],
          provider: { cancelGraceMs: 100, killGraceMs: 200 },
        }),
      )
      const run = agents.track(
        await provider.start(startRequest(workspace, 'deaf', controller.signal)),
      )
      const pid = await agents.pid('deaf')
      await sleep(100)

      controller.abort()
      const result = await run.result

      expect(result.stopReason).toBe('aborted')
      expect(result.output).toEqual([{ type: 'text', text: 'deaf' }])
      // Killed without a dispose: SIGTERM after the cancel grace, SIGKILL after the kill grace.
      for (let i = 0; i < 200 && isAlive(pid); i += 1) await sleep(25)
      expect(isAlive(pid)).toBe(false)
    },
  )

  test_(
    'dispose cancels a running prompt, kills the agent and resolves only once it is reaped',
    async ({ workspace, agents }) => {
      const provider = createAcpProvider(agents.options('dispose'))
      const run = await provider.start(startRequest(workspace, 'hang'))
      const pid = await agents.pid('dispose')
      expect(isAlive(pid)).toBe(true)

      const first = run.dispose()
      const second = run.dispose()
      await Promise.all([first, second])

      expect(isAlive(pid)).toBe(false)
      expect((await run.result).stopReason).toBe('aborted')
      await expect(run.dispose()).resolves.toBeUndefined()
    },
  )

  test_(
    'dispose escalates to SIGKILL when the agent ignores SIGTERM and stdin closing',
    async ({ workspace, agents }) => {
      const provider = createAcpProvider(
        agents.options('stubborn', {
          flags: ['--stubborn'],
          provider: { cancelGraceMs: 50, killGraceMs: 200 },
        }),
      )
      const run = await provider.start(startRequest(workspace, 'hello'))
      const pid = await agents.pid('stubborn')
      await run.result

      await run.dispose()

      expect(isAlive(pid)).toBe(false)
    },
  )

  test_(
    'an abort before the session exists rejects start and leaves no process',
    async ({ workspace, agents }) => {
      const controller = new AbortController()
      const provider = createAcpProvider(
        agents.options('slow-init', { flags: ['--init-delay-ms', '60000'] }),
      )
      const starting = provider.start(startRequest(workspace, 'hello', controller.signal))
      const pid = await agents.pid('slow-init')

      controller.abort(new Error('parent gave up'))
      const error = await startFailure(starting)

      expect(error.code).toBe(AcpStartErrorCode.StartAborted)
      expect(isAlive(pid)).toBe(false)
    },
  )

  test_(
    'an already-aborted signal rejects start without spawning anything',
    async ({ workspace, agents }) => {
      const provider = createAcpProvider(agents.options('pre-aborted'))
      const error = await startFailure(
        provider.start(startRequest(workspace, 'hello', AbortSignal.abort())),
      )

      expect(error.code).toBe(AcpStartErrorCode.StartAborted)
      expect(await agents.spawned('pre-aborted')).toBe(false)
    },
  )

  test_(
    'a handshake slower than startTimeoutMs rejects start and leaves no process',
    async ({ workspace, agents }) => {
      // The budget leaves the agent time to record its pid, so the test can check it is gone after.
      const provider = createAcpProvider(
        agents.options('timeout', {
          flags: ['--init-delay-ms', '60000'],
          provider: { startTimeoutMs: 2_000 },
        }),
      )
      const starting = provider.start(startRequest(workspace, 'hello'))
      const pid = await agents.pid('timeout')
      const error = await startFailure(starting)

      expect(error.code).toBe(AcpStartErrorCode.StartTimeout)
      expect(isAlive(pid)).toBe(false)
    },
  )

  test('a command that cannot be spawned rejects start with spawn_failed', async () => {
    const provider = createAcpProvider({ command: '/nonexistent/acp-agent' })
    const error = await startFailure(provider.start(startRequest(tmpdir(), 'hello')))

    expect(error.code).toBe(AcpStartErrorCode.SpawnFailed)
  })

  test_(
    'an agent that crashes mid-prompt resolves error with a safe category',
    async ({ workspace, agents }) => {
      const provider = createAcpProvider(agents.options('crash'))
      const run = agents.track(await provider.start(startRequest(workspace, 'crash')))
      const result = await run.result

      expect(result).toEqual({
        output: [{ type: 'text', text: 'crashing' }],
        stopReason: 'error',
        failureCategory: FailureCategory.AgentProcessExited,
      })
      expect(isAlive(await agents.pid('crash'))).toBe(false)
      await run.dispose()
    },
  )

  test_.for([
    ['max_tokens', 'max-tokens'],
    ['refusal', 'refusal'],
    ['max_turn_requests', 'error'],
  ] as const)(
    'ACP stop reason %s ends the run as %s',
    async ([acpReason, seamReason], { workspace, agents }) => {
      const provider = createAcpProvider(agents.options(`stop-${acpReason}`))
      const run = agents.track(await provider.start(startRequest(workspace, `stop ${acpReason}`)))
      const result = await run.result

      expect(result.stopReason).toBe(seamReason)
      expect(result.output).toEqual([{ type: 'text', text: 'stopping' }])
    },
  )

  test_('permission requests from the agent are denied', async ({ workspace, agents }) => {
    const provider = createAcpProvider(agents.options('permission'))
    const run = agents.track(await provider.start(startRequest(workspace, 'permission')))

    expect((await run.result).output).toEqual([{ type: 'text', text: 'permission:selected:deny' }])
  })

  test_('agent file reads are served inside the workspace only', async ({ workspace, agents }) => {
    const outside = await mkdtemp(join(tmpdir(), 'baton-acp-outside-'))
    try {
      await writeFile(join(workspace, 'notes.txt'), 'inside the workspace')
      await writeFile(join(outside, 'secret.txt'), 'top secret')
      await symlink(join(outside, 'secret.txt'), join(workspace, 'link.txt'))
      const provider = createAcpProvider(agents.options('read'))
      const read = async (path: string): Promise<unknown> => {
        const run = agents.track(await provider.start(startRequest(workspace, `read ${path}`)))
        return (await run.result).output
      }

      expect(await read(join(workspace, 'notes.txt'))).toEqual([
        { type: 'text', text: 'read:inside the workspace' },
      ])
      expect(await read(join(outside, 'secret.txt'))).toEqual([
        { type: 'text', text: 'read-error:-32602' },
      ])
      expect(await read(join(workspace, 'link.txt'))).toEqual([
        { type: 'text', text: 'read-error:-32602' },
      ])
      expect(await read(join(workspace, '..', 'x', 'y.txt'))).toEqual([
        { type: 'text', text: 'read-error:-32002' },
      ])
    } finally {
      await rm(outside, { recursive: true, force: true })
    }
  })
})
