import { describe, expect, it } from 'vitest'
import { waitSteps, type LedgerTimes } from './wait-steps.ts'

describe('waitSteps', () => {
  it('splits each call at its ledger times and takes the p50 of each step', () => {
    const calls = [
      { attemptId: 'a', sentAtMs: 1000, answeredAtMs: 1010 },
      { attemptId: 'b', sentAtMs: 2000, answeredAtMs: 2020 },
      { attemptId: 'c', sentAtMs: 3000, answeredAtMs: 3008 },
    ]
    const ledger = new Map<string, LedgerTimes>([
      ['a', { acceptedAtMs: 1001, claimedAtMs: 1004, committedAtMs: 1006 }],
      ['b', { acceptedAtMs: 2002, claimedAtMs: 2010, committedAtMs: 2011 }],
      ['c', { acceptedAtMs: 3001.5, claimedAtMs: 3003.5, committedAtMs: 3005.5 }],
    ])
    expect(waitSteps(calls, ledger)).toEqual({
      // to accept 1, 2, 1.5; accept → claim 3, 8, 2; claim → commit 2, 1, 2; commit → answer 4, 9, 2.5
      toAcceptMs: 1.5,
      // accept → commit 5, 9, 4
      acceptToCommitMs: 5,
      acceptToClaimMs: 3,
      claimToCommitMs: 2,
      commitToAnswerMs: 4,
      calls: 3,
    })
  })

  it('leaves out calls the ledger has no complete times for', () => {
    const calls = [
      { attemptId: 'a', sentAtMs: 0, answeredAtMs: 10 },
      { attemptId: 'refused', sentAtMs: 20, answeredAtMs: 21 },
    ]
    const ledger = new Map([['a', { acceptedAtMs: 1, claimedAtMs: 2, committedAtMs: 4 }]])
    expect(waitSteps(calls, ledger)).toEqual({
      toAcceptMs: 1,
      acceptToCommitMs: 3,
      acceptToClaimMs: 1,
      claimToCommitMs: 2,
      commitToAnswerMs: 6,
      calls: 1,
    })
  })

  it('has no claim steps for a ledger without claims (the hand-rolled service)', () => {
    const calls = [{ attemptId: 'a', sentAtMs: 0, answeredAtMs: 10 }]
    const ledger = new Map([['a', { acceptedAtMs: 2, committedAtMs: 7 }]])
    expect(waitSteps(calls, ledger)).toEqual({
      toAcceptMs: 2,
      acceptToCommitMs: 5,
      acceptToClaimMs: undefined,
      claimToCommitMs: undefined,
      commitToAnswerMs: 3,
      calls: 1,
    })
  })

  it('is zero with no calls', () => {
    expect(waitSteps([], new Map())).toEqual({
      toAcceptMs: 0,
      acceptToCommitMs: 0,
      acceptToClaimMs: undefined,
      claimToCommitMs: undefined,
      commitToAnswerMs: 0,
      calls: 0,
    })
  })
})
