import { Writable } from 'node:stream'
import { describe, expect, test } from 'vitest'
import { FAILURE_CATEGORIES } from '@baton/contracts'
import { createLogger } from '@baton/observability'
import { durableOutcome, type ChildEnd } from './durable-outcome.ts'

/** A logger whose warnings the test can read back, parsed. */
function capturingSource() {
  const lines: Record<string, unknown>[] = []
  const destination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>)
      done()
    },
  })
  const logger = createLogger({ service: 'test', level: 'warn', destination })
  return { source: { subagent: 'researcher', logger }, lines }
}

describe('durableOutcome', () => {
  test('every durable category a run declares is stored as declared, silently', () => {
    const { source, lines } = capturingSource()
    for (const category of FAILURE_CATEGORIES) {
      expect(durableOutcome({ stopReason: 'error', failureCategory: category }, source)).toEqual({
        stopReason: 'error',
        failureCategory: category,
      })
    }
    expect(lines).toEqual([])
  })

  test.for([
    ['aborted', 'cancelled'],
    ['error', 'child_failed'],
    ['max-tokens', 'max_tokens'],
    ['refusal', 'refusal'],
  ] as const)('a %s run that names no category gets %s', ([stopReason, expected]) => {
    const { source } = capturingSource()
    expect(durableOutcome({ stopReason }, source)).toEqual({
      stopReason,
      failureCategory: expected,
    })
  })

  test('a completed run has no category, whatever it declares', () => {
    const { source } = capturingSource()
    expect(durableOutcome({ stopReason: 'completed', failureCategory: 'refusal' }, source)).toEqual(
      { stopReason: 'completed', failureCategory: null },
    )
  })

  test('an unknown stop reason is a failure', () => {
    const { source } = capturingSource()
    expect(durableOutcome({ stopReason: 'paused', failureCategory: 'refusal' }, source)).toEqual({
      stopReason: 'error',
      failureCategory: 'unknown_stop_reason',
    })
  })

  test.for<[string, unknown, Record<string, unknown>]>([
    ['an unknown string', 'tool_timeout', { type: 'string', value: 'tool_timeout' }],
    ['an old spelling', 'refused', { type: 'string', value: 'refused' }],
    [
      'an over-long string',
      `secret-${'x'.repeat(10_000)}`,
      { type: 'string', length: 10_007, prefix: `secret-${'x'.repeat(57)}` },
    ],
    ['a number', 42, { type: 'number' }],
    ['null', null, { type: 'null' }],
    ['an object', { category: 'refusal' }, { type: 'object' }],
  ])(
    'a declared category that is %s becomes provider_fault and a bounded warning naming the subagent',
    ([, declared, logged]) => {
      const { source, lines } = capturingSource()
      const end: ChildEnd = { stopReason: 'refusal', failureCategory: declared }
      expect(durableOutcome(end, source)).toEqual({
        stopReason: 'refusal',
        failureCategory: 'provider_fault',
      })
      expect(lines).toHaveLength(1)
      expect(lines[0]).toMatchObject({ level: 40, subagent: 'researcher', declared: logged })
      expect(JSON.stringify(lines[0]).length).toBeLessThan(1_000)
    },
  )
})
