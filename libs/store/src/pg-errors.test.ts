import { describe, expect, it } from 'vitest'
import { isDataError, isTransientStoreError, retryTransient } from './pg-errors.ts'

/** A call that fails with the given errors in turn, then answers `done`. */
function failing(...errors: Error[]): { call: () => Promise<string>; calls: () => number } {
  let calls = 0
  return {
    calls: () => calls,
    call: () => {
      const error = errors[calls]
      calls += 1
      return error === undefined ? Promise.resolve('done') : Promise.reject(error)
    },
  }
}

const serializationFailure = Object.assign(new Error('could not serialize'), { code: '40001' })

describe('retryTransient', () => {
  it('tries a transient store failure again and a non-transient one never', async () => {
    const transient = failing(serializationFailure, serializationFailure)
    await expect(retryTransient(transient.call, { maxDelayMs: 5 })).resolves.toBe('done')
    expect(transient.calls()).toBe(3)

    const unexpected = failing(new Error('check constraint'))
    await expect(retryTransient(unexpected.call, { maxDelayMs: 5 })).rejects.toThrow('check')
    expect(unexpected.calls()).toBe(1)
  })

  it("takes the caller's notion of transient instead of the store's", async () => {
    const http = failing(new Error('ECONNREFUSED'), new Error('ECONNREFUSED'))
    const result = retryTransient(http.call, {
      maxDelayMs: 5,
      transient: (error) => error instanceof Error && error.message === 'ECONNREFUSED',
    })
    await expect(result).resolves.toBe('done')
    expect(http.calls()).toBe(3)
  })

  it('ends with the last error after maxAttempts, or once its signal fired', async () => {
    const bounded = failing(serializationFailure, serializationFailure, serializationFailure)
    await expect(retryTransient(bounded.call, { maxDelayMs: 5, maxAttempts: 2 })).rejects.toBe(
      serializationFailure,
    )
    expect(bounded.calls()).toBe(2)

    const aborted = failing(serializationFailure, serializationFailure)
    await expect(
      retryTransient(aborted.call, { maxDelayMs: 5, signal: AbortSignal.abort() }),
    ).rejects.toBe(serializationFailure)
    expect(aborted.calls()).toBe(1)
  })
})

describe('isDataError', () => {
  it('is SQLSTATE class 22 (a value Postgres refused) and nothing else', () => {
    const pg = (code: string) => Object.assign(new Error('pg'), { code })
    for (const code of ['22P05', '22021', '22001', '22P02']) {
      expect(isDataError(pg(code)), code).toBe(true)
      expect(isTransientStoreError(pg(code)), code).toBe(false)
    }
    for (const code of ['23505', '40001', '08006', '2200', 'ECONNRESET']) {
      expect(isDataError(pg(code)), code).toBe(false)
    }
    expect(isDataError(new Error('no code'))).toBe(false)
    expect(isDataError(undefined)).toBe(false)
  })
})
