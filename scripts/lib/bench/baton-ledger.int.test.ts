import { randomUUID } from 'node:crypto'
import { acceptDelegations, claimAttempts, commitTerminals } from '@baton/store'
import { expect, test } from '@baton/testing'
import { ledgerTimes } from './baton-ledger.ts'
import { wallClockMs } from './wait-steps.ts'

test('reads when the accept, claim and commit of each finished attempt began, on the wall clock', async ({
  db,
}) => {
  const before = wallClockMs()
  const ids = [randomUUID(), randomUUID()]
  await acceptDelegations(
    db,
    ids.map((attemptId) => ({
      namespaceId: 'default',
      sessionId: 'ledger-times',
      name: 'scripted',
      prompt: [{ type: 'text', text: '{"output":"ok"}' }],
      metadata: {},
      attemptId,
      newAgentId: randomUUID(),
    })),
  )
  // The first is claimed and committed; the second stays accepted.
  const finished = ids[0] as string
  await claimAttempts(db, { ownerId: 'w', leaseTtlMs: 30_000, attemptIds: [finished] })
  const [outcome] = await commitTerminals(db, [
    {
      attemptId: finished,
      ownerId: 'w',
      ownerGeneration: 1,
      result: { stopReason: 'completed', output: 'ok', failureCategory: null },
    },
  ])
  expect(outcome).toBe('committed')
  const after = wallClockMs()

  const times = await ledgerTimes(db, [...ids, randomUUID()])
  // Only the attempt that went through all three statements has times.
  expect([...times.keys()]).toEqual([finished])
  const t = times.get(finished)
  expect(t).toBeDefined()
  if (t === undefined) return
  // Milliseconds on the same clock as the bench's: inside the test's own window, in order.
  expect(t.acceptedAtMs).toBeGreaterThanOrEqual(before - 50)
  const claimedAtMs = t.claimedAtMs ?? Number.NaN
  expect(t.acceptedAtMs).toBeLessThan(claimedAtMs)
  expect(claimedAtMs).toBeLessThan(t.committedAtMs)
  expect(t.committedAtMs).toBeLessThanOrEqual(after + 50)
})

test('reads nothing for no ids', async ({ db }) => {
  expect(await ledgerTimes(db, [])).toEqual(new Map())
})
