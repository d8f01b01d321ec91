import { afterEach, beforeEach, describe, expect, test, vi } from 'vitest'
import { ProgressDeadline } from './progress-deadline.ts'

describe('ProgressDeadline', () => {
  beforeEach(() => vi.useFakeTimers())
  afterEach(() => vi.useRealTimers())

  test('moves while the count goes down, fires one timeout after it last did', () => {
    const deadline = new ProgressDeadline(1_000)
    expect(deadline.passed(10)).toBe(false)
    vi.advanceTimersByTime(900)
    expect(deadline.passed(9)).toBe(false)
    vi.advanceTimersByTime(900)
    // 1.8 s since the start, 0.9 s since the last progress.
    expect(deadline.passed(9)).toBe(false)
    // A count that goes up again is not progress.
    vi.advanceTimersByTime(50)
    expect(deadline.passed(12)).toBe(false)
    vi.advanceTimersByTime(100)
    expect(deadline.passed(12)).toBe(true)
  })

  test('fires one timeout after the start when nothing could be counted', () => {
    const deadline = new ProgressDeadline(1_000)
    vi.advanceTimersByTime(999)
    expect(deadline.passed(Number.POSITIVE_INFINITY)).toBe(false)
    vi.advanceTimersByTime(2)
    expect(deadline.passed(Number.POSITIVE_INFINITY)).toBe(true)
  })
})
