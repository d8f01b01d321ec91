// Settings Baton cannot honour stop a process at start, before it touches the ledger or a queue.
import { ARTIFACT_MAX_BYTES_CEILING } from '@baton/contracts'
import { describe, expect, spawnApp, test } from '@baton/testing'

describe('a setting above what Baton can store', () => {
  test.for(['api', 'worker'] as const)(
    '%s: ARTIFACT_MAX_BYTES above the ceiling exits non-zero, naming the setting and the maximum',
    { timeout: 60_000 },
    async (app) => {
      const started = spawnApp(app, { ARTIFACT_MAX_BYTES: String(ARTIFACT_MAX_BYTES_CEILING + 1) })
      await expect(started.ready).rejects.toThrow(/exited/)
      expect(await started.exited).not.toBe(0)
      expect(started.output()).toContain(
        `ARTIFACT_MAX_BYTES: ARTIFACT_MAX_BYTES is at most ${ARTIFACT_MAX_BYTES_CEILING} bytes`,
      )
    },
  )
})
