import { describe, expect, test } from 'vitest'
import { ARTIFACT_MAX_BYTES_CEILING } from '@baton/contracts'
import { loadConfig } from './config.ts'

describe('worker configuration: namespace limit defaults', () => {
  test('ARTIFACT_MAX_BYTES up to what Baton can store and serve is taken', () => {
    const config = loadConfig({ ARTIFACT_MAX_BYTES: String(ARTIFACT_MAX_BYTES_CEILING) })
    expect(config.results.artifactMaxBytes).toBe(ARTIFACT_MAX_BYTES_CEILING)
    expect(loadConfig({}).results.artifactMaxBytes).toBe(64 * 1024 * 1024)
  })

  test('ARTIFACT_MAX_BYTES above it is refused with a message naming the setting and the maximum', () => {
    for (const value of [ARTIFACT_MAX_BYTES_CEILING + 1, 1024 * 1024 * 1024]) {
      expect(() => loadConfig({ ARTIFACT_MAX_BYTES: String(value) })).toThrow(
        `ARTIFACT_MAX_BYTES: ARTIFACT_MAX_BYTES is at most ${ARTIFACT_MAX_BYTES_CEILING} bytes`,
      )
    }
  })
})
