import { describe, expect, test } from 'vitest'
import { ARTIFACT_MAX_BYTES_CEILING } from '@baton/contracts'
import { ApiConfigError, loadConfig } from './config.ts'

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

describe('API configuration: the dashboard read replica', () => {
  test('DATABASE_READ_URL unset or empty: the dashboard reads the primary', () => {
    expect(loadConfig({}).databaseReadUrl).toBeUndefined()
    expect(loadConfig({ DATABASE_READ_URL: '' }).databaseReadUrl).toBeUndefined()
    expect(
      loadConfig({ DATABASE_READ_URL: 'postgres://postgres@127.0.0.1:5433/baton' }).databaseReadUrl,
    ).toBe('postgres://postgres@127.0.0.1:5433/baton')
  })

  test.each(['not a url', 'redis://127.0.0.1:6379', 'http://standby/baton'])(
    'DATABASE_READ_URL %j is refused with an ApiConfigError naming the setting',
    (value) => {
      let thrown: unknown
      try {
        loadConfig({ DATABASE_READ_URL: value })
      } catch (error) {
        thrown = error
      }
      expect(thrown).toBeInstanceOf(ApiConfigError)
      expect((thrown as ApiConfigError).variables).toEqual(['DATABASE_READ_URL'])
      expect((thrown as ApiConfigError).message).toContain(
        'DATABASE_READ_URL: a postgres:// URL of a streaming standby, or unset',
      )
    },
  )
})
