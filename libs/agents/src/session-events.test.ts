import { describe, expect, test } from 'vitest'
import {
  checkSessionLog,
  completedTurnPrefix,
  historySuffix,
  messagesOf,
  seedViolation,
} from './session-events.ts'
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

describe('historySuffix', () => {
  const seed = completedTurnPrefix(log)
  const newTurn: SessionEvent[] = [
    { seq: 4, type: 'turn/start', turnId: 't2' },
    {
      seq: 5,
      type: 'message',
      turnId: 't2',
      message: { role: 'user', content: [{ type: 'text', text: 'q2' }] },
      steering: false,
    },
    {
      seq: 6,
      type: 'message',
      turnId: 't2',
      message: { role: 'assistant', content: [{ type: 'text', text: 'a2' }] },
      steering: false,
    },
    { seq: 7, type: 'turn/end', turnId: 't2', stopReason: 'error', failureCategory: 'model_error' },
  ]
  const resumedLog = [...seed, ...newTurn]
  const jsonRoundTrip = <T>(value: T): T => JSON.parse(JSON.stringify(value)) as T

  test('returns exactly the events after the resumed history', () => {
    expect(historySuffix(seed, resumedLog)).toEqual({ ok: true, suffix: newTurn })
  })

  test('an empty seed makes the whole valid log the suffix', () => {
    expect(historySuffix([], resumedLog)).toEqual({ ok: true, suffix: resumedLog })
  })

  test('events that went through JSON on either side still match', () => {
    expect(historySuffix(jsonRoundTrip(seed), resumedLog)).toEqual({ ok: true, suffix: newTurn })
    expect(historySuffix(seed, jsonRoundTrip(resumedLog))).toEqual({ ok: true, suffix: newTurn })
  })

  test('a log that rewrites the resumed history is refused', () => {
    const rewritten = resumedLog.map((event) =>
      event.seq === 2 && event.type === 'message'
        ? { ...event, message: { role: 'assistant' as const, content: 'a different answer' } }
        : event,
    )
    expect(historySuffix(seed, rewritten)).toEqual({
      ok: false,
      reason: 'the log rewrites event 2 of the resumed history',
    })
  })

  test('a log shorter than the resumed history is refused', () => {
    expect(historySuffix(resumedLog, seed)).toEqual({
      ok: false,
      reason: 'the log is shorter than the resumed history',
    })
  })

  test('a suffix with an unfinished turn is refused', () => {
    expect(historySuffix(seed, resumedLog.slice(0, 6))).toMatchObject({
      ok: false,
      reason: expect.stringMatching(/turn t2 is not finished/),
    })
  })

  test('a suffix with a seq gap is refused', () => {
    const gapped = [...seed, ...newTurn.map((event) => ({ ...event, seq: event.seq + 1 }))]
    expect(historySuffix(seed, gapped)).toMatchObject({
      ok: false,
      reason: expect.stringMatching(/event 4 has seq 5/),
    })
  })

  test('an invalid resumed history is refused', () => {
    expect(historySuffix(log, resumedLog)).toMatchObject({
      ok: false,
      reason: expect.stringMatching(/^the resumed history is invalid: turn t2 is not finished/),
    })
  })
})

describe('checkSessionLog', () => {
  test('accepts a runtime log as it is', () => {
    const seed = completedTurnPrefix(log)
    expect(checkSessionLog(seed)).toEqual({ ok: true, events: seed })
  })

  test.each([
    ['an unknown event type', { seq: 0, type: 'turn/pause', turnId: 't1' }],
    ['an unknown field', { seq: 0, type: 'turn/start', turnId: 't1', extra: true }],
    ['a missing turn id', { seq: 0, type: 'turn/start' }],
    ['an unknown stop reason', { seq: 0, type: 'turn/end', turnId: 't1', stopReason: 'tired' }],
    [
      'a message without content',
      { seq: 0, type: 'message', turnId: 't1', message: { role: 'user' }, steering: false },
    ],
    [
      'tool content that is not a part list',
      {
        seq: 0,
        type: 'message',
        turnId: 't1',
        message: { role: 'tool', content: 'x' },
        steering: false,
      },
    ],
  ])('refuses %s, naming the event', (_, event) => {
    expect(checkSessionLog([event])).toMatchObject({
      ok: false,
      reason: expect.stringMatching(/^event 0 is malformed/),
    })
  })
})
