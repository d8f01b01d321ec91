import { describe, expect, it } from 'vitest'
import { createRestartBackoff, HEALTHY_RUN_MS } from './restart-backoff.ts'

describe('restart backoff', () => {
  it('doubles from 0.5 s up to 10 s while the process keeps crashing soon after it started', () => {
    const backoff = createRestartBackoff()
    const delays = Array.from({ length: 8 }, () => backoff.afterExit(1_000))
    expect(delays).toEqual([500, 1_000, 2_000, 4_000, 8_000, 10_000, 10_000, 10_000])
  })

  it('counts restarts that never became ready as failures too', () => {
    const backoff = createRestartBackoff()
    expect(backoff.afterExit(1_000)).toBe(500)
    expect(backoff.afterFailedStart()).toBe(1_000)
    expect(backoff.afterFailedStart()).toBe(2_000)
  })

  it('restarts quickly again after a minute of health', () => {
    const backoff = createRestartBackoff()
    for (let i = 0; i < 6; i += 1) backoff.afterExit(1_000)
    expect(backoff.afterExit(HEALTHY_RUN_MS - 1)).toBe(10_000)
    expect(backoff.afterExit(HEALTHY_RUN_MS)).toBe(500)
    expect(backoff.afterExit(2_000)).toBe(1_000)
  })
})
