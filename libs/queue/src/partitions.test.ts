import { describe, expect, it } from 'vitest'
import {
  attemptPartition,
  partitionOf,
  partitionPrefix,
  partitionPrefixes,
  sessionPartition,
  splitConcurrency,
} from './partitions.ts'

describe('queue partitions', () => {
  it('hashes with 32-bit FNV-1a, so every process and version agrees on a partition', () => {
    // The published FNV-1a test vectors (0xe40c292c for "a", 0xbf9cf968 for "foobar").
    expect(partitionOf('a', 2 ** 32 - 1)).toBe(0xe40c292c)
    expect(partitionOf('foobar', 2 ** 32 - 1)).toBe(0xbf9cf968)
    // Pinned: a change here moves every queued job of every deployment to another partition.
    expect(sessionPartition({ namespaceId: 'ns_default', sessionId: 'session-1' }, 8)).toBe(2)
    expect(attemptPartition('0b6c1b0e-4b1a-4c7e-9a43-0e1a2b3c4d5e', 8)).toBe(5)
  })

  it('puts everything in partition 0 when there is one, and spreads sessions when there are many', () => {
    expect(sessionPartition({ namespaceId: 'n', sessionId: 's' }, 1)).toBe(0)
    const seen = new Set<number>()
    for (let i = 0; i < 200; i++)
      seen.add(sessionPartition({ namespaceId: 'n', sessionId: `s${i}` }, 8))
    expect([...seen].sort()).toEqual([0, 1, 2, 3, 4, 5, 6, 7])
  })

  it('keeps the plain prefix for one partition without a cluster, and a hash tag otherwise', () => {
    expect(partitionPrefixes({ prefix: 'baton', partitions: 1 })).toEqual(['baton'])
    const cluster = { nodes: [{ host: '127.0.0.1', port: 7000 }], retry: 'failover' as const }
    expect(partitionPrefixes({ prefix: 'baton', partitions: 1, cluster })).toEqual(['{baton}'])
    expect(partitionPrefix({ prefix: 'baton', partitions: 8 }, 3)).toBe('{baton:p3}')
  })

  it('splits a process concurrency evenly, the first partitions one more, at least one each', () => {
    expect(splitConcurrency(100, 8)).toEqual([13, 13, 13, 13, 12, 12, 12, 12])
    expect(splitConcurrency(100, 1)).toEqual([100])
    expect(splitConcurrency(3, 8)).toEqual([1, 1, 1, 1, 1, 1, 1, 1])
  })
})
