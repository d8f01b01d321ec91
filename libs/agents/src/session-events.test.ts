import { describe, expect, test } from 'vitest'
import { completedTurnPrefix, messagesOf, seedViolation } from './session-events.ts'
import type { SessionEvent } from './session-events.ts'

const log: SessionEvent[] = [
  { seq: 0, type: 'turn/start', turnId: 't1' },
  {
    seq: 1,
    type: 'message',
    turnId: 't1',
    message: { role: 'user', content: 'q1' },
    steering: false,
  },
  {
    seq: 2,
    type: 'message',
    turnId: 't1',
    message: { role: 'assistant', content: 'a1' },
    steering: false,
  },
  { seq: 3, type: 'turn/end', turnId: 't1', stopReason: 'completed' },
  { seq: 4, type: 'turn/start', turnId: 't2' },
  {
    seq: 5,
    type: 'message',
    turnId: 't2',
    message: { role: 'user', content: 'in flight' },
    steering: false,
  },
]

describe('session events', () => {
  test('the completed-turn prefix ends at the last turn/end and excludes the in-flight turn', () => {
    const prefix = completedTurnPrefix(log)
    expect(prefix.map((event) => event.seq)).toEqual([0, 1, 2, 3])
    expect(messagesOf(prefix)).toEqual([
      { role: 'user', content: 'q1' },
      { role: 'assistant', content: 'a1' },
    ])
  })

  test('a log with no finished turn has an empty prefix', () => {
    expect(completedTurnPrefix(log.slice(4).map((event, seq) => ({ ...event, seq })))).toEqual([])
  })

  test('a seed must be balanced and contiguous from 0', () => {
    expect(seedViolation(completedTurnPrefix(log))).toBeUndefined()
    expect(seedViolation(log)).toMatch(/not finished/)
    expect(seedViolation(log.slice(1))).toMatch(/contiguous/)
  })
})
