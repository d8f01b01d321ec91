import { createLogger } from '@baton/observability'
import { describe, expect, it } from 'vitest'
import { ShutdownDeadlineError, createCheckedShutdown, shutdownUntilDrained } from './shutdown.ts'

const quiet = createLogger({ service: 'test', level: 'silent' })

/** Shutdown parts whose owned work ends when `finish()` is called; every step is counted. */
function parts() {
  let finish!: () => void
  const drained = new Promise<void>((resolve) => (finish = resolve))
  const calls = { stopAdmission: 0, abortOwned: 0, reconcileOnce: 0, closeAll: 0 }
  let owned = 1
  return {
    calls,
    finish() {
      owned = 0
      finish()
    },
    parts: {
      stopAdmission: () => {
        calls.stopAdmission += 1
        return drained
      },
      abortOwned: () => void (calls.abortOwned += 1),
      owned: () => owned,
      reconcileOnce: async () => {
        // A pass takes a moment, as a real one does: a second unserialised call would overlap it.
        await new Promise((r) => setTimeout(r, 20))
        calls.reconcileOnce += 1
      },
      closeAll: () => {
        calls.closeAll += 1
        return Promise.resolve()
      },
      logger: quiet,
    },
  }
}

describe('checked shutdown', () => {
  it('serialises concurrent calls: one drain, one final reconcile pass, one close', async () => {
    const p = parts()
    const shutdown = createCheckedShutdown(p.parts)
    const first = shutdown(5_000)
    const second = shutdown(5_000)
    await new Promise((r) => setTimeout(r, 10))
    // The second call waits for the first instead of running beside it.
    expect(p.calls.abortOwned).toBe(1)
    p.finish()
    await Promise.all([first, second])
    expect(p.calls).toEqual({ stopAdmission: 1, abortOwned: 1, reconcileOnce: 1, closeAll: 1 })
  })

  it('is tried again after each deadline until the drain completes', async () => {
    const p = parts()
    const shutdown = createCheckedShutdown(p.parts)
    const tries: number[] = []
    const until = shutdownUntilDrained(
      (deadlineMs, signal) => {
        tries.push(deadlineMs)
        if (tries.length === 3) setTimeout(() => p.finish(), 5)
        return shutdown(deadlineMs, signal)
      },
      20,
      quiet,
    )
    await until
    expect(tries.length).toBeGreaterThanOrEqual(3)
    expect(p.calls.closeAll).toBe(1)
  })

  it('gives up the retrying when its signal fires', async () => {
    const p = parts()
    const shutdown = createCheckedShutdown(p.parts)
    const forced = new AbortController()
    setTimeout(() => forced.abort(), 60)
    const outcome = await shutdownUntilDrained(shutdown, 20, quiet, forced.signal).then(
      () => 'drained',
      (error: unknown) => error,
    )
    expect(outcome).not.toBe('drained')
    expect(outcome).not.toBeInstanceOf(ShutdownDeadlineError)
    expect(p.calls.closeAll).toBe(0)
    p.finish()
  })
})
