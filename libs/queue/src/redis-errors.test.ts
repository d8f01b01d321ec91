import { describe, expect, it } from 'vitest'
import { classifyRedisError, isTransientRedisError } from './redis-errors.ts'

const withCode = (code: string) => Object.assign(new Error(`connect ${code}`), { code })

describe('classifyRedisError', () => {
  it('calls broken sockets, ioredis timeouts and closed connections transient', () => {
    for (const code of ['ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'ECONNREFUSED']) {
      expect(classifyRedisError(withCode(code)), code).toBe('transient')
    }
    for (const message of [
      'Command timed out',
      'Connection is closed.',
      "Stream isn't writeable and enableOfflineQueue options is false",
      'Reached the max retries per request limit (which is 3). Refer to "maxRetriesPerRequest" option for details.',
    ]) {
      expect(classifyRedisError(new Error(message)), message).toBe('transient')
    }
    const maxRetries = Object.assign(new Error('max retries'), {
      name: 'MaxRetriesPerRequestError',
    })
    expect(isTransientRedisError(maxRetries)).toBe(true)
  })

  it('calls the replies of a loading, busy, failing-over or full server transient', () => {
    for (const reply of [
      'LOADING Redis is loading the dataset in memory',
      'BUSY Redis is busy running a script.',
      'TRYAGAIN Multiple keys request during rehashing of slot',
      'CLUSTERDOWN The cluster is down',
      'MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to no',
      "READONLY You can't write against a read only replica.",
      'OOM command not allowed when used memory > maxmemory',
      'ERR max number of clients reached',
    ]) {
      expect(classifyRedisError(new Error(reply)), reply).toBe('transient')
    }
  })

  it("calls BullMQ's lost lock or job a confirmed loss, and everything else a bug", () => {
    for (const message of [
      'Missing lock for job 1. moveToFinished',
      'Lock mismatch for job 1. Cmd moveToFinished from active',
      'Missing key for job 1. moveToFinished',
    ]) {
      expect(classifyRedisError(new Error(message)), message).toBe('confirmed_loss')
    }
    for (const error of [
      new Error('WRONGTYPE Operation against a key holding the wrong kind of value'),
      new Error('ERR unknown command'),
      'text',
      null,
    ]) {
      expect(classifyRedisError(error), String(error)).toBe('bug')
    }
  })
})
