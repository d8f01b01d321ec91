import { bytesSurvivingScavenges } from '@baton/testing/young-generation'
import { describe, expect, it } from 'vitest'
import { createSettledDoorbell } from './bounded-wait.ts'

describe('settled doorbell', () => {
  it('wakes a waiter with the detail of its ring, and forgets it', async () => {
    const doorbell = createSettledDoorbell()
    const subscription = doorbell.subscribe('a-1')
    expect(doorbell.waiting).toBe(1)
    const woken = subscription.wait(10_000)
    doorbell.ring('a-1', { namespaceId: 'n-1', view: null })
    expect(await woken).toBe('rang')
    expect(subscription.detail).toEqual({ namespaceId: 'n-1', view: null })
    expect(doorbell.waiting).toBe(0)
    // A ring before the wait: the wait answers at once.
    const early = doorbell.subscribe('a-2')
    doorbell.ring('a-2')
    expect(await early.wait(10_000)).toBe('rang')
    expect(early.detail).toBeUndefined()
  })

  it('a subscription rung and done with dies young', async () => {
    const doorbell = createSettledDoorbell()
    const survived = await bytesSurvivingScavenges(() => {
      const subscription = doorbell.subscribe('a-1')
      void subscription.wait(10_000)
      doorbell.ring('a-1')
    })
    // With `detail` a getter of an object literal, each subscription (its closures, its wait's
    // promise) outlived the scavenges: about 1 KB a wait.
    expect(survived).toBeLessThan(600)
    expect(doorbell.waiting).toBe(0)
  })
})
