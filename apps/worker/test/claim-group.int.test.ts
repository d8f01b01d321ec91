// A worker's claims leave in groups (one statement for every claim waiting behind the last one).
// When a group's answer is lost after the ledger committed it, every attempt in it is this
// worker's, and none of its jobs may be acknowledged as `held`: each runs, exactly once.
import { randomUUID } from 'node:crypto'
import { createAttemptQueue } from '@baton/queue'
import {
  describe,
  eventually,
  expect,
  startFaultProxy,
  test,
  transitionEvents,
} from '@baton/testing'
import { accept, enqueue, startRuntime, untilTerminal } from './support/worker-harness.ts'
import { witnessedChild, witnessedPrompt } from './support/witnessed-child.ts'

const GROUP = 20

describe('a claim group whose answer was lost', () => {
  test('every attempt in it runs exactly once', async ({ services }) => {
    const { db, databaseUrl, redisUrl, queuePrefix, track } = services
    const proxy = track(await startFaultProxy(databaseUrl))
    const child = witnessedChild()
    const ctx = { databaseUrl: proxy.url, redisUrl, queuePrefix, track }
    const runtime = await startRuntime(ctx, child.provider, {
      WORKER_CONCURRENCY: String(GROUP + 1),
      LEASE_TTL_MS: '4000',
      HEARTBEAT_INTERVAL_MS: '300',
      REQUEUE_AFTER_MS: '600000',
    })
    const queue = createAttemptQueue({ connection: { url: redisUrl }, prefix: queuePrefix })
    try {
      // A first claim whose answer is held back: the claims of the next jobs gather behind it.
      const firstPrompt = witnessedPrompt(`first-${randomUUID()}`)
      const first = await accept(db, firstPrompt)
      const firstHeld = proxy.holdAnswerAfter(first)
      await enqueue(ctx, first)
      const firstAnswer = await firstHeld

      const prompts = Array.from({ length: GROUP }, (_, i) =>
        witnessedPrompt(`group-${i}-${randomUUID()}`),
      )
      const ids: string[] = []
      for (const prompt of prompts) ids.push(await accept(db, prompt))
      await enqueue(ctx, ...ids)
      // Every job fetched: its claim waits in the group behind the first.
      await eventually(async () =>
        (await queue.getActiveCount()) === GROUP + 1 ? true : undefined,
      )
      const groupHeld = proxy.holdAnswerAfter(ids[GROUP - 1] ?? '')
      firstAnswer.release()
      const groupAnswer = await groupHeld
      // The group committed in the ledger; its answer is then lost with its connection.
      await eventually(async () => {
        const claimed = await Promise.all(ids.map((id) => transitionEvents(db, id)))
        return claimed.every((events) => events.includes('claimed')) ? true : undefined
      })
      groupAnswer.reset()

      for (const [i, id] of ids.entries()) {
        const prompt = prompts[i] ?? ''
        expect(await untilTerminal(db, id)).toMatchObject({
          stopReason: 'completed',
          output: JSON.parse(prompt).output,
        })
        expect(await transitionEvents(db, id)).toEqual(['accepted', 'claimed', 'committed'])
        expect(child.starts(prompt)).toBe(1)
      }
      expect(await untilTerminal(db, first)).toMatchObject({ stopReason: 'completed' })
    } finally {
      await queue.close()
      await runtime.shutdownChecked(10_000)
      await proxy.close()
    }
  })
})
