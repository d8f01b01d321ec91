// The steering contract: `202` on steer means recorded, and the attempt view says which recorded
// messages reached the child (`steering: { accepted, delivered }`).
import { claimAttempt, commitTerminal } from '@baton/store'
import { describe, eventually, expect, test } from '@baton/testing'
import { apiTest, delegate } from './support/api-harness.ts'

describe('steering progress in the attempt view', () => {
  test('a steered running attempt shows accepted 1, then delivered 1 once its child has it', async ({
    baton,
  }) => {
    const api = await baton()
    const { attemptId } = await api.delegateRunning('s-steering-view', { awaitSteering: 2 })
    expect((await api.get(`/v1/attempts/${attemptId}`)).body.steering).toEqual({
      accepted: 0,
      delivered: 0,
    })
    const steer = await api.post(`/v1/attempts/${attemptId}/steer`, { content: 'first' })
    expect(steer).toMatchObject({ status: 202, body: { sequence: 1 } })
    // Still running (the child waits for a second message): delivery shows in the view.
    const delivered = await eventually(async () => {
      const view = (await api.get(`/v1/attempts/${attemptId}`)).body
      return view.steering.delivered === 1 ? view : undefined
    })
    expect(delivered).toMatchObject({ status: 'running', steering: { accepted: 1, delivered: 1 } })
    await api.post(`/v1/attempts/${attemptId}/steer`, { content: 'second' })
    const terminal = await api.get(`/v1/attempts/${attemptId}/wait?timeoutMs=10000`)
    expect(terminal.body).toMatchObject({
      status: 'terminal',
      output: 'first\nsecond',
      steering: { accepted: 2, delivered: 2 },
    })
  })

  apiTest(
    'a steer recorded as the child ends is accepted but never delivered: the terminal view says so',
    async ({ api, db }) => {
      const accepted = await api.post(delegate('s-steering-late'), {
        name: 'scripted',
        prompt: 'x',
      })
      const attemptId = accepted.body.attemptId as string
      // This test is the worker: it owns the attempt, its child has just returned, and a steer
      // lands before the terminal commit — nobody will ever hand it to that child.
      const claim = await claimAttempt(db, { attemptId, ownerId: 'late-owner', leaseTtlMs: 30_000 })
      if (claim.kind !== 'claimed') throw new Error(claim.kind)
      const steer = await api.post(`/v1/attempts/${attemptId}/steer`, { content: 'too late' })
      expect(steer).toMatchObject({ status: 202, body: { sequence: 1 } })
      expect(
        await commitTerminal(db, {
          attemptId,
          ownerId: 'late-owner',
          ownerGeneration: claim.attempt.ownerGeneration,
          result: { stopReason: 'completed', output: 'x', failureCategory: null },
        }),
      ).toBe('committed')
      const view = await api.get(`/v1/attempts/${attemptId}/wait?timeoutMs=1000`)
      expect(view.body).toMatchObject({
        status: 'terminal',
        stopReason: 'completed',
        steering: { accepted: 1, delivered: 0 },
      })
    },
  )

  test('an unsteered attempt shows { accepted: 0, delivered: 0 }, queued and terminal', async ({
    baton,
  }) => {
    const api = await baton({ workers: 0 })
    const accepted = await api.post(delegate('s-unsteered'), {
      name: 'scripted',
      prompt: '{"output":"plain"}',
    })
    const attemptId = accepted.body.attemptId as string
    expect((await api.get(`/v1/attempts/${attemptId}`)).body).toMatchObject({
      status: 'accepted',
      steering: { accepted: 0, delivered: 0 },
    })
    await api.startWorker()
    const terminal = await api.get(`/v1/attempts/${attemptId}/wait?timeoutMs=10000`)
    expect(terminal.body).toMatchObject({
      status: 'terminal',
      output: 'plain',
      steering: { accepted: 0, delivered: 0 },
    })
  })
})
