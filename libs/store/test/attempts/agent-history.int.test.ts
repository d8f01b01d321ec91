import { randomUUID } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import { describe, expect, historyTurn, test } from '@baton/testing'
import type { Db } from '../../src/db.ts'
import { getAgentHistory } from '../../src/attempts/agent-history.ts'
import { claimAttempt } from '../../src/attempts/claim-attempt.ts'
import { commitTerminal, commitTerminals } from '../../src/attempts/commit-terminal.ts'
import { getAttempt } from '../../src/attempts/get-attempt.ts'
import { commitProcessLoss } from '../../src/attempts/reconcile-process-loss.ts'
import { acceptScripted } from '../support/attempts.ts'
import { DEFAULT_RESULT_POLICY } from '../../src/artifacts/result-policy.ts'
import { setNamespaceLimits } from '../../src/tenants/namespace-limits.ts'

const done = { stopReason: 'completed', output: 'done', failureCategory: null }

/** Accepts an attempt (a new agent, or a continuation of `agentId`) and claims it for `w1`. */
async function acceptAndClaim(db: Db, agentId?: string, leaseTtlMs = 10_000) {
  const { attemptId, outcome } = await acceptScripted(db, 'context', agentId)
  if (outcome.kind !== 'accepted') throw new Error(outcome.kind)
  const claim = await claimAttempt(db, { attemptId, ownerId: 'w1', leaseTtlMs })
  if (claim.kind !== 'claimed') throw new Error(claim.kind)
  const fence = { attemptId, ownerId: 'w1', ownerGeneration: claim.attempt.ownerGeneration }
  return { fence, agentId: claim.attempt.agentId, historyLength: claim.attempt.historyLength }
}

async function history(db: Db, agentId: string) {
  const view = await getAgentHistory(db, agentId)
  return view?.events.map((e) => ({ seq: e.seq, attemptId: e.attemptId })) ?? []
}

describe('agent context deltas', () => {
  test('a delta becomes visible only with its terminal commit, and an exact replay appends nothing', async ({
    db,
  }) => {
    const { fence, agentId, historyLength } = await acceptAndClaim(db)
    expect(historyLength).toBe(0)
    expect(await history(db, agentId)).toEqual([])

    const result = { ...done, history: { baseSeq: 0, events: historyTurn(0, 'one') } }
    expect(await commitTerminal(db, { ...fence, result })).toBe('committed')
    const view = await getAgentHistory(db, agentId)
    expect(view?.events.map((e) => e.event)).toEqual(historyTurn(0, 'one'))
    expect(view?.events.every((e) => e.attemptId === fence.attemptId)).toBe(true)
    expect(await getAttempt(db, fence.attemptId)).toMatchObject({
      context: { baseSeq: 0, eventCount: 3 },
    })

    // The lost-response retry: same delta, same fingerprint.
    expect(await commitTerminal(db, { ...fence, result })).toBe('replayed')
    // A retry claiming a different history is a different outcome, and is refused.
    const other = { ...done, history: { baseSeq: 0, events: historyTurn(0, 'rewritten') } }
    expect(await commitTerminal(db, { ...fence, result: other })).toBe('refused')
    expect(await commitTerminal(db, { ...fence, result: done })).toBe('refused')
    expect((await getAgentHistory(db, agentId))?.events.map((e) => e.event)).toEqual(
      historyTurn(0, 'one'),
    )
  })

  test('a continuation appends after the history it resumed from; a delta at the wrong base writes nothing', async ({
    db,
  }) => {
    const first = await acceptAndClaim(db)
    await commitTerminal(db, {
      ...first.fence,
      result: { ...done, history: { baseSeq: 0, events: historyTurn(0, 'one') } },
    })

    const second = await acceptAndClaim(db, first.agentId)
    expect(second.agentId).toBe(first.agentId)
    expect(second.historyLength).toBe(3)
    const stale = { ...done, history: { baseSeq: 0, events: historyTurn(0, 'two') } }
    expect(await commitTerminal(db, { ...second.fence, result: stale })).toBe('history_conflict')
    expect(await getAttempt(db, second.fence.attemptId)).toMatchObject({ status: 'running' })

    const suffix = { ...done, history: { baseSeq: 3, events: historyTurn(3, 'two') } }
    expect(await commitTerminal(db, { ...second.fence, result: suffix })).toBe('committed')
    expect(await history(db, first.agentId)).toEqual([
      ...[0, 1, 2].map((seq) => ({ seq, attemptId: first.fence.attemptId })),
      ...[3, 4, 5].map((seq) => ({ seq, attemptId: second.fence.attemptId })),
    ])
  })

  test('an expired owner and a lost process contribute no history', async ({ db }) => {
    const expired = await acceptAndClaim(db, undefined, 100)
    await sleep(200)
    const result = { ...done, history: { baseSeq: 0, events: historyTurn(0, 'late') } }
    expect(await commitTerminal(db, { ...expired.fence, result })).toBe('lease_lost')
    expect(await history(db, expired.agentId)).toEqual([])

    const made = await commitProcessLoss(db, [
      { attemptId: expired.fence.attemptId, ownerGeneration: expired.fence.ownerGeneration },
    ])
    expect(made).toHaveLength(1)
    expect(await commitTerminal(db, { ...expired.fence, result })).toBe('refused')
    expect(await history(db, expired.agentId)).toEqual([])
    expect(await getAttempt(db, expired.fence.attemptId)).toMatchObject({
      failureCategory: 'process_lost',
      context: null,
    })
  })

  test('deltas of many attempts commit in one batch, each to its own agent', async ({ db }) => {
    const claimed = await Promise.all([0, 1, 2].map(() => acceptAndClaim(db)))
    const outcomes = await commitTerminals(
      db,
      claimed.map((c, i) => ({
        ...c.fence,
        result: { ...done, history: { baseSeq: 0, events: historyTurn(0, `child ${i}`) } },
      })),
    )
    expect(outcomes).toEqual(['committed', 'committed', 'committed'])
    for (const [i, c] of claimed.entries()) {
      const view = await getAgentHistory(db, c.agentId)
      expect(view?.events.map((e) => e.event)).toEqual(historyTurn(0, `child ${i}`))
    }
  })

  test('an unknown agent has no context', async ({ db }) => {
    expect(await getAgentHistory(db, randomUUID())).toBeUndefined()
  })
})

describe('the agent history limit', () => {
  test('a delta that would take the history past its limit is refused history_too_large with nothing written, in a batch too; the namespace limit in the ledger overrides the default', async ({
    db,
  }) => {
    const policy = { ...DEFAULT_RESULT_POLICY, agentHistoryMaxBytes: 400 }
    const events = historyTurn(0, 'one')
    const size = events.reduce<number>((sum, e) => sum + Buffer.byteLength(JSON.stringify(e)), 0)
    expect(size).toBeLessThan(400)
    const first = await acceptAndClaim(db)
    const result = { ...done, history: { baseSeq: 0, events } }
    expect(await commitTerminal(db, { ...first.fence, result }, policy)).toBe('committed')

    // A continuation whose delta would pass the limit: refused, alone and in a batch.
    const next = await acceptAndClaim(db, first.agentId)
    const more = { ...done, history: { baseSeq: 3, events: historyTurn(3, 'x'.repeat(400)) } }
    expect(await commitTerminal(db, { ...next.fence, result: more }, policy)).toBe(
      'history_too_large',
    )
    const other = await acceptAndClaim(db)
    expect(
      await commitTerminals(
        db,
        [
          { ...next.fence, result: more },
          { ...other.fence, result },
        ],
        policy,
      ),
    ).toEqual(['history_too_large', 'committed'])
    expect((await getAttempt(db, next.fence.attemptId))?.status).toBe('running')
    expect(await history(db, first.agentId)).toHaveLength(3)

    // The namespace's stored limit takes precedence over the default.
    await setNamespaceLimits(db, 'default', {
      artifactQuotaBytes: null,
      artifactMaxBytes: null,
      agentHistoryMaxBytes: 10_000,
    })
    try {
      expect(await commitTerminal(db, { ...next.fence, result: more }, policy)).toBe('committed')
      expect(await history(db, first.agentId)).toHaveLength(6)
    } finally {
      await setNamespaceLimits(db, 'default', {
        artifactQuotaBytes: null,
        artifactMaxBytes: null,
        agentHistoryMaxBytes: null,
      })
    }
  })
})
