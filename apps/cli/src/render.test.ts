import type { AttemptView, TerminalAttemptView } from '@baton/contracts'
import { describe, expect, test } from 'vitest'
import {
  CLEAR_LINE,
  progressFrame,
  renderAttempt,
  renderClaim,
  renderRun,
  renderConclusion,
} from './render.ts'

const running: AttemptView = {
  attemptId: 'a1',
  agentId: 'g1',
  sessionId: 's1',
  name: 'scripted',
  status: 'running',
  createdAt: '2026-01-01T00:00:00.000Z',
  startedAt: '2026-01-01T00:00:00.100Z',
  cancelRequested: false,
  steering: { accepted: 0, delivered: 0 },
}

const terminal = (over: Partial<TerminalAttemptView>): TerminalAttemptView => ({
  ...running,
  status: 'terminal',
  stopReason: 'completed',
  output: 'done',
  outputTruncated: false,
  outputBytes: 4,
  digest: 'baton.result.v1:sha256:00',
  failureCategory: null,
  terminalAt: '2026-01-01T00:00:01.000Z',
  context: null,
  artifact: null,
  ...over,
})

describe('renderAttempt', () => {
  test('a running attempt: ids and status, no terminal fields', () => {
    expect(renderAttempt({ ...running, cancelRequested: true })).toBe(
      [
        'attempt  a1',
        'agent    g1',
        'session  s1',
        'name     scripted',
        'status   running (cancel requested)',
      ].join('\n'),
    )
  })

  test('a steered attempt says how many steering messages were accepted and delivered', () => {
    expect(renderAttempt({ ...running, steering: { accepted: 3, delivered: 2 } })).toMatch(
      /status {4}running\nsteering {2}3 accepted, 2 delivered$/,
    )
    expect(renderAttempt(running)).not.toContain('steering')
  })

  test('a terminal attempt adds stop reason, failure category and the output aligned under its column', () => {
    expect(renderAttempt(terminal({ output: 'line one\nline two' }))).toMatch(
      /status {4}terminal\nstop {6}completed\ncategory {2}-\noutput {4}line one\n {10}line two$/,
    )
    expect(
      renderAttempt(terminal({ stopReason: 'error', failureCategory: 'child_failed', output: '' })),
    ).toMatch(/stop {6}error\ncategory {2}child_failed\noutput$/)
  })

  test('a long or truncated output is cut and says how many bytes the whole result has', () => {
    const long = renderAttempt(terminal({ output: 'x'.repeat(5_000), outputBytes: 5_000 }))
    expect(long).toContain(`${'x'.repeat(1_000)}…\n`)
    expect(long).not.toContain('x'.repeat(1_001))
    expect(long).toMatch(/\(preview of 5000 bytes\)$/)
    const truncated = renderAttempt(
      terminal({ output: 'abc', outputTruncated: true, outputBytes: 9_000 }),
    )
    expect(truncated).toMatch(/output {4}abc…\n {10}\(preview of 9000 bytes\)$/)
  })
})

describe('artifacts, runs and continuations', () => {
  test('a terminal attempt names its artifact and its delivery before the output', () => {
    const shown = renderAttempt(
      terminal({
        artifact: { artifactId: 'art1', bytes: 9_000, digest: 'd', expiresAt: '' },
        delivery: {
          state: 'suppressed',
          receiptDigest: 'r',
          consumingRunId: 'run2',
          suppression: { reason: 'consumer_failed', runId: 'run2' },
        },
      }),
    )
    expect(shown).toMatch(
      /category {2}-\nartifact {2}art1\ndelivery {2}suppressed: consumer_failed \(run run2\)\noutput {4}done$/,
    )
  })

  test('a run: ids, trigger, status, cause, times and lease, "-" for what it lacks', () => {
    const run = {
      runId: 'r1',
      sessionId: 's1',
      triggerType: 'async_subagent_result',
      status: 'active',
      causeAttemptId: 'a1',
      createdAt: 't0',
      settledAt: null,
      leaseExpiresAt: 't1',
    } as const
    const lines = [
      'run          r1',
      'session      s1',
      'trigger      async_subagent_result',
      'status       active',
      'cause        a1',
      'created      t0',
      'ended        -',
      'lease until  t1',
    ]
    expect(renderRun(run)).toBe(lines.join('\n'))
    // What a consumption delivered follows, each with its receipt and content.
    expect(
      renderRun({
        ...run,
        consumed: [{ attemptId: 'a2', receipt: '{}', input: '{}', content: inlineText('done') }],
      }),
    ).toBe([...lines, '', 'attempt  a2', 'receipt  {}', 'content  done'].join('\n'))
  })

  test('a claim shows the fence to send back and at most 1,000 characters of its content', () => {
    const claim = {
      runId: 'r1',
      attemptId: 'a1',
      receipt: '{"attemptId":"a1"}',
      input: '{}',
      content: inlineText('é'.repeat(1_500)),
      claim: { claimToken: 'tok', generation: 2, leaseExpiresAt: 't1' },
    }
    const shown = renderClaim(claim)
    expect(shown).toMatch(
      /^run {10}r1\nclaim token {2}tok\ngeneration {3}2\nlease until {2}t1\nattempt {2}a1\nreceipt {2}\{"attemptId":"a1"\}\ncontent {2}é{1000}…\n {9}\(preview of 3000 bytes\)$/,
    )
    expect(
      renderClaim({
        ...claim,
        content: { kind: 'expired', artifactId: 'x1', bytes: 9, digest: 'd' },
      }),
    ).toMatch(/\ncontent {2}expired: 9 bytes, d \(artifact x1\)$/)
  })

  test('a concluded continuation: its delivery and whether it was a replay', () => {
    expect(
      renderConclusion({
        runId: 'r1',
        attemptId: 'a1',
        receipt: '{}',
        delivery: {
          state: 'delivered',
          receiptDigest: 'r',
          consumingRunId: 'r1',
          suppression: null,
        },
        replayed: true,
      }),
    ).toBe('run       r1\nattempt   a1\ndelivery  delivered (run r1)\nreplayed  true')
  })
})

function inlineText(text: string) {
  return { kind: 'inline', text } as const
}

describe('progressFrame', () => {
  test('clears the line, then status, elapsed and the attempt once known', () => {
    expect(progressFrame({ status: 'submitting', elapsedMs: 40, attemptId: undefined })).toBe(
      `${CLEAR_LINE}submitting  0.0s`,
    )
    expect(progressFrame({ status: 'running', elapsedMs: 1_530, attemptId: 'a1' })).toBe(
      `${CLEAR_LINE}running  1.5s  attempt a1`,
    )
    expect(CLEAR_LINE).toBe('\r\x1b[2K')
  })
})
