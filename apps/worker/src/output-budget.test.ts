import { describe, expect, it } from 'vitest'
import { bytesSurvivingScavenges } from '@baton/testing/young-generation'
import { createOutputBudget } from './output-budget.ts'

describe('output budget', () => {
  it('holds what fits, refuses what does not without holding any of it, and gives it back on release', () => {
    const budget = createOutputBudget(100)
    const a = budget.open()
    const b = budget.open()
    expect(a.reserve(60)).toBe(true)
    expect(b.reserve(50)).toBe(false)
    expect(b.heldBytes).toBe(0)
    expect(b.holdAtLeast(40)).toBe(true)
    expect(budget.heldBytes).toBe(100)
    // Topping up holds only the shortfall: a already holds 60.
    expect(a.holdAtLeast(60)).toBe(true)
    expect(a.holdAtLeast(61)).toBe(false)
    expect(a.heldBytes).toBe(60)
    a.release()
    a.release()
    expect(budget.heldBytes).toBe(40)
    // A released hold takes nothing more (a child still running after its attempt ended).
    expect(a.reserve(1)).toBe(false)
    expect(b.holdAtLeast(100)).toBe(true)
    b.release()
    expect(budget.heldBytes).toBe(0)
  })
})

describe("an attempt's hold", () => {
  it('dies young: nothing of it outlives the scavenges after its release', async () => {
    const budget = createOutputBudget(1_000_000_000)
    const survived = await bytesSurvivingScavenges(() => {
      const hold = budget.open()
      hold.reserve(10)
      hold.release()
    })
    // A hold made as an object literal with a getter kept about 200 bytes a hold.
    expect(survived).toBeLessThan(100)
    expect(budget.heldBytes).toBe(0)
  })
})
