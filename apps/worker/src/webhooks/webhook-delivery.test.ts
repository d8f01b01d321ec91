import { describe, expect, test } from 'vitest'
import { retryDelayMs } from './webhook-delivery.ts'

describe('webhook retries', () => {
  test('the delay doubles from the base up to the cap, with jitter between half and all of it', () => {
    const config = { retryBaseMs: 1000, retryMaxMs: 60_000 }
    expect([1, 2, 3, 4].map((t) => retryDelayMs(t, config, () => 1))).toEqual([
      1000, 2000, 4000, 8000,
    ])
    expect(retryDelayMs(3, config, () => 0)).toBe(2000)
    expect(retryDelayMs(30, config, () => 1)).toBe(60_000)
    expect(retryDelayMs(30, config, () => 0)).toBe(30_000)
  })
})
