import { describe, expect, it } from 'vitest'
import { createGroupBatcher } from './group-batcher.ts'

function deferred<T>() {
  let resolve!: (v: T) => void
  const promise = new Promise<T>((r) => (resolve = r))
  return { promise, resolve }
}

describe('group batcher', () => {
  it('sends a lone item at once, in a batch of one', async () => {
    const batches: number[][] = []
    const b = createGroupBatcher(
      async (items: number[]) => {
        batches.push(items)
        return items.map((i) => i * 2)
      },
      { maxBatch: 10, maxInFlight: 1 },
    )
    expect(await b.submit(21)).toBe(42)
    expect(batches).toEqual([[21]])
  })

  it('coalesces items submitted while a batch is in flight, up to maxBatch, preserving order', async () => {
    const gate = deferred<void>()
    const batches: number[][] = []
    const b = createGroupBatcher(
      async (items: number[]) => {
        batches.push(items)
        if (batches.length === 1) await gate.promise
        return items.map((i) => i + 100)
      },
      { maxBatch: 3, maxInFlight: 1 },
    )
    const first = b.submit(0)
    await Promise.resolve()
    const rest = [1, 2, 3, 4, 5].map((i) => b.submit(i))
    expect(b.pending).toBe(6)
    gate.resolve()
    expect(await Promise.all([first, ...rest])).toEqual([100, 101, 102, 103, 104, 105])
    expect(batches).toEqual([[0], [1, 2, 3], [4, 5]])
    expect(b.pending).toBe(0)
  })

  it('rejects every item of a failed batch and keeps serving later ones', async () => {
    let fail = true
    const b = createGroupBatcher(
      async (items: string[]) => {
        if (fail) throw new Error('store down')
        return items
      },
      { maxBatch: 10, maxInFlight: 2 },
    )
    const failed = await Promise.allSettled([b.submit('a'), b.submit('b')])
    expect(failed.map((r) => r.status)).toEqual(['rejected', 'rejected'])
    fail = false
    expect(await b.submit('c')).toBe('c')
  })

  it('refuses a run that returns the wrong number of results', async () => {
    const b = createGroupBatcher(async () => [], { maxBatch: 10, maxInFlight: 1 })
    await expect(b.submit(1)).rejects.toThrow(/0 results for 1 items/)
  })

  it('isolates a failed batch when told to: only the offending item gets the error', async () => {
    const batches: string[][] = []
    const b = createGroupBatcher(
      async (items: string[]) => {
        batches.push(items)
        if (items.includes('bad')) throw new Error('check violation')
        return items.map((i) => i.toUpperCase())
      },
      { maxBatch: 10, maxInFlight: 1, isolate: (e) => (e as Error).message === 'check violation' },
    )
    const settled = await Promise.allSettled([b.submit('a'), b.submit('bad'), b.submit('c')])
    expect(settled).toEqual([
      { status: 'fulfilled', value: 'A' },
      { status: 'rejected', reason: new Error('check violation') },
      { status: 'fulfilled', value: 'C' },
    ])
    expect(batches).toEqual([['a', 'bad', 'c'], ['a'], ['bad'], ['c']])
  })
})
