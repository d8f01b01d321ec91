import { describe, expect, test } from 'vitest'
import { mapAcpStopReason } from './stop-reason.ts'

describe('mapAcpStopReason', () => {
  test.each([
    ['end_turn', { stopReason: 'completed' }],
    ['cancelled', { stopReason: 'aborted', failureCategory: 'cancelled' }],
    ['max_tokens', { stopReason: 'max-tokens', failureCategory: 'max_tokens' }],
    ['refusal', { stopReason: 'refusal', failureCategory: 'refusal' }],
    ['max_turn_requests', { stopReason: 'error', failureCategory: 'max_turn_requests' }],
    ['something_new', { stopReason: 'error', failureCategory: 'unknown_stop_reason' }],
  ])('%s maps to %o', (reason, expected) => {
    expect(mapAcpStopReason(reason)).toEqual(expected)
  })
})
