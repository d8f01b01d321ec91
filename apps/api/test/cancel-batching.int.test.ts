import { randomUUID } from 'node:crypto'
import { claimAttempt } from '@baton/store'
import { describe, expect } from '@baton/testing'
import { apiTest, delegate } from './support/api-harness.ts'

describe('cancel through the API', () => {
  apiTest(
    'a burst of concurrent cancels shares ledger statements and each request gets its own answer',
    async ({ inProcessApi, db }) => {
      let cancelStatements = 0
      const harness = await inProcessApi(
        {},
        {
          onQuery: (text) => {
            if (text.includes('cancel_requested_at')) cancelStatements += 1
          },
        },
      )
      const accept = async (session: string) => {
        const accepted = await harness.post(delegate(session), { name: 'scripted', prompt: 'x' })
        expect(accepted.status).toBe(202)
        return accepted.body.attemptId as string
      }
      const running: string[] = []
      for (let i = 0; i < 20; i += 1) {
        const attemptId = await accept(`s-burst-${i}`)
        const claim = await claimAttempt(db, { attemptId, ownerId: 'w1', leaseTtlMs: 60_000 })
        expect(claim.kind).toBe('claimed')
        running.push(attemptId)
      }
      const queued = await accept('s-burst-queued')
      const unknown = randomUUID()

      // Another transaction holds the running rows: the first statements block, and every request
      // that arrives meanwhile waits in the batcher for the next one.
      let release: () => void = () => undefined
      const released = new Promise<void>((resolve) => (release = resolve))
      let locked: () => void = () => undefined
      const holding = new Promise<void>((resolve) => (locked = resolve))
      const blocker = db.transaction().execute(async (trx) => {
        await trx
          .selectFrom('attempts')
          .select('id')
          .where('id', 'in', running)
          .forUpdate()
          .execute()
        locked()
        await released
      })
      let answers: { status: number; body: any }[]
      try {
        await holding
        const cancels = [...running, queued, unknown].map((id) =>
          harness.post(`/v1/attempts/${id}/cancel`, { reason: 'burst' }),
        )
        await new Promise((r) => setTimeout(r, 500))
        release()
        await blocker
        answers = await Promise.all(cancels)
      } finally {
        release()
        await blocker
      }
      // Two statements in flight when the rows were released, one for everything that waited.
      expect(cancelStatements).toBeLessThanOrEqual(3)
      expect(answers.slice(0, running.length).map((a) => [a.status, a.body.outcome])).toEqual(
        running.map(() => [202, 'cancel_requested']),
      )
      expect(answers[running.length]).toMatchObject({
        status: 202,
        body: { attemptId: queued, outcome: 'cancelled_queued' },
      })
      expect(answers[running.length + 1]).toMatchObject({
        status: 404,
        body: { error: { code: 'ATTEMPT_NOT_FOUND' } },
      })
    },
  )
})
