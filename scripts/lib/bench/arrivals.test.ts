import { describe, expect, it } from 'vitest'
import { arrivalBatches, meanBatchSize } from './arrivals.ts'

describe('arrivalBatches', () => {
  it('groups delegations by accept statement, in start order, with each job held from claim to commit', () => {
    const batches = arrivalBatches([
      { acceptedAtMs: 1005.25, claimedAtMs: 1007, committedAtMs: 1010 },
      { acceptedAtMs: 1000, claimedAtMs: 1002, committedAtMs: 1003.5 },
      { acceptedAtMs: 1005.25, claimedAtMs: 1006, committedAtMs: 1012 },
      { acceptedAtMs: 1000, claimedAtMs: 1001, committedAtMs: 1001 },
      { acceptedAtMs: 1003, claimedAtMs: 1004, committedAtMs: 1005 },
    ])
    expect(batches).toEqual([
      { atMs: 0, holdMs: [1.5, 0] },
      { atMs: 3, holdMs: [1] },
      { atMs: 5.25, holdMs: [3, 6] },
    ])
    expect(meanBatchSize(batches)).toBeCloseTo(5 / 3)
  })

  it('holds from the accept when no claim is recorded, never for a negative time', () => {
    expect(
      arrivalBatches([
        { acceptedAtMs: 10, committedAtMs: 14 },
        { acceptedAtMs: 10, claimedAtMs: 12, committedAtMs: 11 },
      ]),
    ).toEqual([{ atMs: 0, holdMs: [4, 0] }])
  })

  it('has nothing to replay for no delegations', () => {
    expect(arrivalBatches([])).toEqual([])
    expect(meanBatchSize([])).toBe(0)
  })
})
