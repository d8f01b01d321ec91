import { describe, expect, test } from 'vitest'
import { ARTIFACT_MAX_BYTES_CEILING } from '@baton/contracts'
import { loadConfig } from './config.ts'

describe('API configuration: namespace limit defaults', () => {
  test('the defaults it reports are the settings, ARTIFACT_MAX_BYTES up to the ceiling', () => {
    const config = loadConfig({
      ARTIFACT_MAX_BYTES: String(ARTIFACT_MAX_BYTES_CEILING),
      NAMESPACE_ARTIFACT_MAX_BYTES: '1000',
    })
    expect(config.limitDefaults).toEqual({
      artifactMaxBytes: ARTIFACT_MAX_BYTES_CEILING,
      artifactQuotaBytes: 1000,
      agentHistoryMaxBytes: 64 * 1024 * 1024,
    })
  })

  test('ARTIFACT_MAX_BYTES above what Baton can store is refused, naming the setting and the maximum', () => {
    expect(() =>
      loadConfig({ ARTIFACT_MAX_BYTES: String(ARTIFACT_MAX_BYTES_CEILING + 1) }),
    ).toThrow(
      `invalid API configuration: ARTIFACT_MAX_BYTES: ARTIFACT_MAX_BYTES is at most ${ARTIFACT_MAX_BYTES_CEILING} bytes`,
    )
  })
})
