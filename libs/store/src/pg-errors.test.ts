import { describe, expect, it } from 'vitest'
import {
  LedgerTimeoutError,
  classifyStoreError,
  isDataError,
  isTransientStoreError,
  retryTransient,
} from './pg-errors.ts'

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

describe('classifyStoreError', () => {
  const pg = (code: string, message = 'pg') => Object.assign(new Error(message), { code })

  it('calls failover, overload, cancel, lock and connection codes transient', () => {
    for (const code of [
      '57P01', // admin_shutdown
      '57P02', // crash_shutdown
      '57P03', // cannot_connect_now
      '25006', // read_only_sql_transaction
      '25P03', // idle_in_transaction_session_timeout
      '53300', // too_many_connections
      '53400', // configuration_limit_exceeded
      '57014', // query_canceled (statement_timeout)
      '55P03', // lock_not_available (lock_timeout)
      '40001', // serialization_failure
      '40P01', // deadlock_detected
      '08000',
      '08003',
      '08006',
      '08001',
      '08P01',
    ]) {
      expect(classifyStoreError(pg(code)), code).toBe('transient')
    }
  })

  it('calls broken sockets, node-postgres connection errors and deadlines transient', () => {
    for (const code of ['ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'ECONNREFUSED']) {
      expect(classifyStoreError(pg(code, `connect ${code}`)), code).toBe('transient')
    }
    for (const message of [
      'Connection terminated unexpectedly',
      'Connection terminated',
      'Connection terminated due to connection timeout',
      'timeout exceeded when trying to connect',
      'Client has encountered a connection error and is not queryable',
      'Query read timeout',
    ]) {
      expect(classifyStoreError(new Error(message)), message).toBe('transient')
    }
    expect(classifyStoreError(new LedgerTimeoutError(100))).toBe('transient')
    const refused = new AggregateError([pg('ECONNREFUSED'), pg('ECONNREFUSED')], 'connect')
    expect(classifyStoreError(refused)).toBe('transient')
  })

  it('calls refused values bad input, and everything else a bug', () => {
    for (const code of ['22P05', '22001', '23505', '23503']) {
      expect(classifyStoreError(pg(code)), code).toBe('bad_input')
    }
    for (const error of [
      pg('42P01'),
      pg('XX000'),
      pg('P0001'),
      new Error('check constraint'),
      new Error('Client was closed and is not queryable'),
      'a string',
      undefined,
    ]) {
      expect(classifyStoreError(error), String(error)).toBe('bug')
    }
  })
})
