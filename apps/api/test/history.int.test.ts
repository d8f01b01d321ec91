import { mkdtemp, mkdir, writeFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, test, type BatonHttp } from '@baton/testing'

// A subagent whose scripted model answers, after a pause, with every user message it was given:
// what it says is the conversation it was resumed with.
const REMEMBERER = `---
name: rememberer
description: Repeats every task it has been given
tools: [view]
model: scripted:recall
---
Repeat what you were asked.
`
const RECALL_SCRIPT = { steps: [{ kind: 'recall', delayMs: 1_500 }] }

interface ContextEvent {
  readonly seq: number
  readonly attemptId: string
  readonly event: { readonly type: string; readonly message?: { readonly role: string } }
}

async function withSubagentDirs(run: (dirs: Record<string, string>) => Promise<void>) {
  const root = await mkdtemp(join(tmpdir(), 'baton-context-'))
  try {
    const dirs = {
      SUBAGENTS_DIR: join(root, 'subagents'),
      SCRIPTED_MODELS_DIR: join(root, 'scripts'),
      WORKSPACE_DIR: join(root, 'workspace'),
    }
    for (const dir of Object.values(dirs)) await mkdir(dir)
    await writeFile(join(dirs.SUBAGENTS_DIR, 'rememberer.md'), REMEMBERER)
    await writeFile(join(dirs.SCRIPTED_MODELS_DIR, 'recall.json'), JSON.stringify(RECALL_SCRIPT))
    await run(dirs)
  } finally {
    await rm(root, { recursive: true, force: true })
  }
}

async function historyOf(h: BatonHttp, agentId: string): Promise<ContextEvent[]> {
  const view = await h.client.getAgentHistory(agentId)
  expect(view.agentId).toBe(agentId)
  return view.events as ContextEvent[]
}

/** `type` or `type:role` per event, the shape of a history at a glance. */
function shape(events: readonly ContextEvent[]): string[] {
  return events.map((e) =>
    e.event.message === undefined ? e.event.type : `${e.event.type}:${e.event.message.role}`,
  )
}

const TURN = ['turn/start', 'message:user', 'message:assistant', 'turn/end']

describe('context deltas: durable agent history', () => {
  test('history is visible only after the terminal commit, and a continuation resumes it and adds only its suffix', async ({
    baton,
  }) => {
    await withSubagentDirs(async (dirs) => {
      const h = await baton({ env: dirs })
      const path = '/v1/sessions/s-context/delegations'
      const first = await h.post(path, { name: 'rememberer', prompt: 'first task' })
      const agentId = first.body.agentId as string
      await h.untilRunning(first.body.attemptId as string)
      // Running, its turn already under way in the worker: nothing of it is in the session yet.
      expect(await historyOf(h, agentId)).toEqual([])
      const done = await h.get(`/v1/attempts/${first.body.attemptId}/wait?timeoutMs=10000`)
      expect(done.body).toMatchObject({
        status: 'terminal',
        output: 'first task',
        context: { baseSeq: 0, eventCount: 4 },
      })
      const afterFirst = await historyOf(h, agentId)
      expect(shape(afterFirst)).toEqual(TURN)
      expect(afterFirst.every((e) => e.attemptId === first.body.attemptId)).toBe(true)

      // A continuation of the same agent: the model is given the first turn, then the new task.
      const second = await h.post(path, {
        name: 'rememberer',
        agentId,
        prompt: 'second task',
        wait: { timeoutMs: 10_000 },
      })
      expect(second.body).toMatchObject({
        status: 'terminal',
        stopReason: 'completed',
        output: 'first task\nsecond task',
        context: { baseSeq: 4, eventCount: 4 },
      })
      const afterSecond = await historyOf(h, agentId)
      expect(shape(afterSecond)).toEqual([...TURN, ...TURN])
      expect(afterSecond.map((e) => e.seq)).toEqual([0, 1, 2, 3, 4, 5, 6, 7])
      // The first attempt's events are unchanged; the continuation added only its suffix.
      expect(afterSecond.slice(0, 4)).toEqual(afterFirst)
      expect(afterSecond.slice(4).every((e) => e.attemptId === second.body.attemptId)).toBe(true)

      expect((await h.get(`/v1/agents/${crypto.randomUUID()}/context`)).body).toMatchObject({
        error: { code: 'AGENT_NOT_FOUND' },
      })
      expect((await h.get('/v1/agents/not-a-uuid/context')).status).toBe(400)
      await h.close()
    })
  })

  test('a worker killed mid-turn contributes nothing to the history; the next continuation resumes from what was committed', async ({
    baton,
  }) => {
    await withSubagentDirs(async (dirs) => {
      const h = await baton({ env: dirs })
      const path = '/v1/sessions/s-context-kill/delegations'
      const first = await h.post(path, {
        name: 'rememberer',
        prompt: 'kept task',
        wait: { timeoutMs: 10_000 },
      })
      expect(first.body).toMatchObject({ status: 'terminal', output: 'kept task' })
      const agentId = first.body.agentId as string

      const lost = await h.post(path, { name: 'rememberer', agentId, prompt: 'lost task' })
      await h.untilRunning(lost.body.attemptId as string)
      expect(await h.killWorker()).toBe('SIGKILL')
      await h.startWorker()
      const lostView = await h.get(`/v1/attempts/${lost.body.attemptId}/wait?timeoutMs=10000`)
      expect(lostView.body).toMatchObject({
        status: 'terminal',
        failureCategory: 'process_lost',
        context: null,
      })
      expect(shape(await historyOf(h, agentId))).toEqual(TURN)

      const next = await h.post(path, {
        name: 'rememberer',
        agentId,
        prompt: 'next task',
        wait: { timeoutMs: 10_000 },
      })
      // The lost turn never reached the session, so the model is not given it.
      expect(next.body).toMatchObject({
        status: 'terminal',
        output: 'kept task\nnext task',
        context: { baseSeq: 4, eventCount: 4 },
      })
      expect(shape(await historyOf(h, agentId))).toEqual([...TURN, ...TURN])
      await h.close()
    })
  })
})
